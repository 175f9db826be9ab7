// Junk opaque tokens against a real introspection endpoint, through the node:http pipeline: a flood of made-up
// tokens from one address reaches the authorization server a bounded number of times (the rest get 429 with
// Retry-After), valid tokens never count against their address, the same junk token repeated costs two calls,
// and an outage of the endpoint is never remembered as a refusal.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { GuardOptions } from '../../src/core/guard/guard-options.js';
import { DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS } from '../../src/core/token/introspection-bounds.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const V = { 'mcp-protocol-version': '2025-11-25' };
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const introspection = { clientId: 'rs-client', clientSecret: 'rs-secret' };

let issuer: TestIssuer;
const servers: Server[] = [];

async function serveGuard(options: Partial<GuardOptions>): Promise<string> {
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, introspection, ...options });
  const pipeline = createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { tools: [] } }));
  const server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

const junk = (): string => randomBytes(24).toString('base64url');

before(async () => {
  issuer = await startTestIssuer();
});
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await issuer?.close();
});

describe('introspection under a flood of made-up opaque tokens', () => {
  test('300 unauthenticated requests, each with a new token, cause a bounded number of introspection calls', { timeout: 60_000 }, async () => {
    const url = await serveGuard({});
    const perWindow = Number(DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS.split('/')[0]);
    const before = issuer.requests('/introspect');
    const started = Date.now();
    const answers = [];
    // 30 at a time, as a client flooding over a few connections would.
    for (let batch = 0; batch < 10; batch++) {
      answers.push(...(await Promise.all(Array.from({ length: 30 }, () => postMcp(url, LIST, junk(), V)))));
    }
    const elapsedMs = Date.now() - started;
    const calls = issuer.requests('/introspect') - before;
    // Fixed one-second windows: at most one window's worth of refusals per second started, and one more, each
    // plus the calls already in flight (one batch) when the bound was reached.
    assert.ok(calls <= (perWindow + 30) * (Math.ceil(elapsedMs / 1000) + 1), `${calls} introspection calls in ${elapsedMs} ms`);
    assert.ok(calls >= 1);
    const refused = answers.filter((a) => a.status === 401);
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(refused.length + limited.length, 300, 'every answer is 401 or 429');
    assert.equal(refused.length, calls, 'a token is refused (401) only after the endpoint was asked');
    assert.ok(limited.length >= 300 - calls);
    for (const answer of refused) {
      assert.match(String(answer.headers['www-authenticate']), /^Bearer error="invalid_token", error_description="access token is not active"/);
      assert.equal(answer.json.error.code, -31401);
    }
    const first = limited[0]!;
    assert.equal(first.headers['retry-after'], '1');
    assert.equal(first.headers['www-authenticate'], undefined);
    assert.equal(first.json.id, 1);
    assert.equal(first.json.error.code, -31429);
    assert.match(first.json.error.message, /^Too many refused access tokens from this address: at most 20\/s; retry later$/);
  });

  test('the same junk token repeated costs two introspection calls: a refusal is remembered from its second time', async () => {
    const url = await serveGuard({});
    const token = junk();
    const before = issuer.requests('/introspect');
    for (let i = 0; i < 50; i++) {
      const answer = await postMcp(url, LIST, token, V);
      assert.equal(answer.status, 401);
      assert.match(String(answer.headers['www-authenticate']), /error="invalid_token", error_description="access token is not active"/);
      assert.equal(answer.json.error.code, -31401);
    }
    assert.equal(issuer.requests('/introspect') - before, 2);
  });

  test('a token the endpoint refused once, then accepts (a replica not yet in sync), is served on the retry', async () => {
    const url = await serveGuard({});
    const token = `glitch-${junk()}`;
    const before = issuer.requests('/introspect');
    assert.equal((await postMcp(url, LIST, token, V)).status, 401);
    issuer.setIntrospection(token, { active: true, sub: 'alice', client_id: 'app', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 600 });
    assert.equal((await postMcp(url, LIST, token, V)).status, 200);
    assert.equal(issuer.requests('/introspect') - before, 2);
  });

  test('while an address is past its refusals, its new tokens get 429, valid ones included; another address is served', async () => {
    const url = await serveGuard({ introspection: { ...introspection, refusalsPerAddress: '20/min' } });
    const valid = (): string => {
      const token = `valid-${junk()}`;
      issuer.setIntrospection(token, { active: true, sub: 'bob', client_id: 'app', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 600 });
      return token;
    };
    // A token accepted before the flood stays served from the cache.
    const cached = valid();
    assert.equal((await postMcp(url, LIST, cached, V)).status, 200);
    const before = issuer.requests('/introspect');
    for (let i = 0; i < 20; i++) assert.equal((await postMcp(url, LIST, junk(), V)).status, 401);
    assert.equal(issuer.requests('/introspect') - before, 20);
    // Past the bound: more junk, and a valid new token from the same address, get 429 without a call.
    assert.equal((await postMcp(url, LIST, junk(), V)).status, 429);
    const refused = await postMcp(url, LIST, valid(), V);
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers['retry-after']) > 0 && Number(refused.headers['retry-after']) <= 60);
    assert.equal(refused.json.error.code, -31429);
    assert.equal(issuer.requests('/introspect') - before, 20);
    assert.equal((await postMcp(url, LIST, cached, V)).status, 200, 'a cached token costs no call and is served');
    // Another address is served.
    assert.equal((await postMcp(url, LIST, valid(), V, '127.0.0.2')).status, 200);
    assert.equal(issuer.requests('/introspect') - before, 21);
  });

  test('valid new tokens from one address, at any rate, are never limited', async () => {
    const url = await serveGuard({ introspection: { ...introspection, refusalsPerAddress: '5/min' } });
    const tokens = Array.from({ length: 200 }, () => {
      const token = `busy-${junk()}`;
      issuer.setIntrospection(token, { active: true, sub: 'carol', client_id: 'app', aud: RESOURCE, exp: Math.floor(Date.now() / 1000) + 600 });
      return token;
    });
    const before = issuer.requests('/introspect');
    const answers = [];
    for (let batch = 0; batch < 10; batch++) answers.push(...(await Promise.all(tokens.slice(batch * 20, batch * 20 + 20).map((t) => postMcp(url, LIST, t, V)))));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    assert.equal(issuer.requests('/introspect') - before, 200);
  });

  test('a token refused for another resource is remembered too; with refusalsPerAddress false each new token is asked about', async () => {
    const url = await serveGuard({ introspection: { ...introspection, refusalsPerAddress: false } });
    issuer.setIntrospection('elsewhere', { active: true, aud: 'https://other.example.com' });
    const before = issuer.requests('/introspect');
    for (let i = 0; i < 3; i++) assert.equal((await postMcp(url, LIST, 'elsewhere', V)).status, 401);
    assert.equal(issuer.requests('/introspect') - before, 2);
    // No bound per address: a flood of new tokens is asked about, each once.
    const many = await Promise.all(Array.from({ length: 40 }, () => postMcp(url, LIST, junk(), V)));
    assert.deepEqual([...new Set(many.map((a) => a.status))], [401]);
    assert.equal(issuer.requests('/introspect') - before, 42);
  });

  test('an outage is not remembered as a refusal: every request asks again and gets 503', async () => {
    let calls = 0;
    const failing = createServer((_req, res) => {
      calls++;
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"server_error"}');
    });
    servers.push(failing);
    failing.listen(0, '127.0.0.1');
    await once(failing, 'listening');
    const endpoint = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/introspect`;
    const url = await serveGuard({ introspection: { ...introspection, endpoint } });
    const token = junk();
    for (let i = 0; i < 3; i++) {
      const answer = await postMcp(url, LIST, token, V);
      assert.equal(answer.status, 503);
      assert.equal(answer.headers['retry-after'], '5');
      assert.equal(answer.json.error.code, -31503);
    }
    assert.equal(calls, 3);
  });
});
