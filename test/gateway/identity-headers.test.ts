// Identity headers through the whole gateway, with tokens signed by a real key: each distinct subject, client id
// and scope list reaches the upstream as a distinct header value (plain ASCII unchanged, anything else in the
// `=?base64?…?=` form), and the scopes the upstream reads are the ones the gateway decided on.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeMirroredHeaderValue } from '../../src/core/wire/header-value-encoding.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const POLICY = { scopesSupported: ['basic', 'admin'], tools: { secret_admin: ['admin'], '*': [] } };

describe('identity headers through the gateway', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let dir: string;
  const received: IncomingHttpHeaders[] = [];
  let nextId = 1;

  /** Calls `tool` with a token carrying `claims`; returns the answer and the headers the upstream got, if any. */
  async function call(claims: Record<string, unknown>, tool = 'echo'): Promise<{ status: number; code?: number; headers?: IncomingHttpHeaders }> {
    const token = await issuer.sign({ aud: gateway.resource, ...claims });
    const before = received.length;
    const res = await postMcp(gateway.resource, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: tool, arguments: {} } }, token, { 'mcp-protocol-version': '2025-11-25' });
    return { status: res.status, code: res.json?.error?.code, headers: received.length > before ? received[received.length - 1] : undefined };
  }

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push(req.headers);
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown };
        const text = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } });
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
      });
    });
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    dir = mkdtempSync(join(tmpdir(), 'identity-headers-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(POLICY));
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, MCP_AUTH_IDENTITY_HEADERS: 'on', PORT: '0' });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('distinct subjects reach the upstream as distinct X-MCP-Subject values; a plain one unchanged', async () => {
    const subjects = [
      'alice@example.com',
      'alice\u0416@example.com',
      'ali\u200bce@example.com',
      'alice@example.com\u2028',
      'alice\u0000@example.com',
      'alice@example.com\t',
      `=?base64?${Buffer.from('alice@example.com').toString('base64')}?=`,
    ];
    const seen: string[] = [];
    for (const sub of subjects) {
      const { status, headers } = await call({ sub, scope: 'basic' });
      assert.equal(status, 200, JSON.stringify(sub));
      const value = headers?.['x-mcp-subject'];
      assert.equal(typeof value, 'string');
      assert.equal(decodeMirroredHeaderValue(value as string), sub, 'the upstream decodes the exact subject');
      seen.push(value as string);
    }
    assert.equal(seen[0], 'alice@example.com', 'a plain subject is sent as it is');
    assert.equal(seen[1], '=?base64?YWxpY2XQlkBleGFtcGxlLmNvbQ==?=');
    assert.equal(new Set(seen).size, subjects.length, seen.join('\n'));
  });

  test('distinct client ids stay distinct too, and the issuer is sent as it is', async () => {
    const plain = await call({ sub: 'bob', client_id: 'app', scope: 'basic' });
    const other = await call({ sub: 'bob', client_id: 'app\u0416', scope: 'basic' });
    assert.equal(plain.headers?.['x-mcp-client-id'], 'app');
    assert.equal(other.headers?.['x-mcp-client-id'], `=?base64?${Buffer.from('app\u0416').toString('base64')}?=`);
    assert.equal(plain.headers?.['x-mcp-issuer'], issuer.issuer);
  });

  test('a scope that is no scope token is dropped for the gateway and the upstream alike', async () => {
    // The real grant: both scopes, the admin tool allowed, and the upstream told so.
    const real = await call({ sub: 'carol', scope: 'basic admin' }, 'secret_admin');
    assert.equal(real.status, 200);
    assert.equal(real.headers?.['x-mcp-scopes'], 'basic admin');

    // One scope spelled "basic admin" (scp array): no scope at all. The gateway refuses the admin tool, and an
    // allowed call tells the upstream no scopes, never "basic admin".
    const spaced = await call({ sub: 'carol', scp: ['basic admin'] }, 'secret_admin');
    assert.equal(spaced.status, 403);
    assert.equal(spaced.headers, undefined, 'a refused call never reaches the upstream');
    const spacedEcho = await call({ sub: 'carol', scp: ['basic admin'] });
    assert.equal(spacedEcho.status, 200);
    assert.equal(spacedEcho.headers?.['x-mcp-scopes'], '');

    // "adminЖ" is not "admin": refused by the gateway, and the upstream reads "basic" only.
    const lookalike = await call({ sub: 'carol', scope: 'basic admin\u0416' }, 'secret_admin');
    assert.equal(lookalike.status, 403);
    const lookalikeEcho = await call({ sub: 'carol', scope: 'basic admin\u0416' });
    assert.equal(lookalikeEcho.headers?.['x-mcp-scopes'], 'basic');
  });

  test('a token whose subject has no UTF-8 form (a lone surrogate) is refused', async () => {
    const { status, headers } = await call({ sub: 'alice\ud800@example.com', scope: 'basic' });
    assert.equal(status, 401);
    assert.equal(headers, undefined);
  });
});
