// /readyz: 503 with the reason while the issuer or the upstream is down, 200 when both are up, answers cached.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';
import { NODE_SERVER, quote } from '../../helpers/stdio-gateway.js';

let issuer: TestIssuer;
let upstream: Server;
let upstreamUrl: string;
let pings = 0;
const gateways: RunningGateway[] = [];

async function closedPort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  s.close();
  await once(s, 'close');
  return port;
}

async function gatewayFor(settings: Record<string, string>, readinessCacheMs = 0): Promise<RunningGateway> {
  const gateway = await startGateway(loadGatewayConfig({ HOST: '127.0.0.1', PORT: '0', MCP_AUTH_HTTP_TIMEOUT_MS: '1000', ...settings }), { log: () => {}, warn: () => {}, readinessCacheMs });
  gateways.push(gateway);
  return gateway;
}

async function readyz(gateway: RunningGateway): Promise<{ status: number; body: Record<string, any> }> {
  const answer = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}

describe('/readyz', () => {
  before(async () => {
    issuer = await startTestIssuer();
    // A raw upstream that refuses a request without a session, as many do: it answers, so it is up.
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        pings++;
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no session"}}');
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  });
  after(async () => {
    for (const g of gateways) await g.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await issuer?.close();
  });

  it('200 when the issuer metadata is loaded and the upstream answers; /healthz unchanged', async () => {
    const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM: upstreamUrl });
    const ready = await readyz(gateway);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.deepEqual(ready.body, { status: 'ready', issuers: { ok: true }, upstream: { ok: true } });
    const health = await fetch(`${gateway.url}/healthz`);
    assert.deepEqual(await health.json(), { status: 'ok' });
  });

  it('503 naming the issuer while it is down, with the upstream up', async () => {
    const port = await closedPort();
    const gateway = await gatewayFor({ MCP_AUTH_ISSUER: `http://127.0.0.1:${port}`, MCP_AUTH_UPSTREAM: upstreamUrl });
    const ready = await readyz(gateway);
    assert.equal(ready.status, 503);
    assert.equal(ready.body.status, 'not_ready');
    assert.equal(ready.body.issuers.ok, false);
    assert.match(ready.body.issuers.reason, new RegExp(`127\\.0\\.0\\.1:${port}`), 'the reason names the issuer URL');
    assert.deepEqual(ready.body.upstream, { ok: true });
  });

  it('503 naming the upstream while it is down, with the issuer up', async () => {
    const port = await closedPort();
    const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM: `http://127.0.0.1:${port}/mcp` });
    const ready = await readyz(gateway);
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body.issuers, { ok: true });
    assert.deepEqual(ready.body.upstream, { ok: false, reason: 'the upstream cannot be reached (ECONNREFUSED)' });
  });

  it('an upstream answering 5xx is not ready', async () => {
    const failing = createServer((req, res) => {
      req.resume();
      res.writeHead(502).end();
    });
    failing.listen(0, '127.0.0.1');
    await once(failing, 'listening');
    try {
      const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM: `http://127.0.0.1:${(failing.address() as AddressInfo).port}/mcp` });
      const ready = await readyz(gateway);
      assert.equal(ready.status, 503);
      assert.deepEqual(ready.body.upstream, { ok: false, reason: 'the upstream answered HTTP 502' });
    } finally {
      failing.closeAllConnections();
      failing.close();
    }
  });

  it('answers are cached: many /readyz requests, one probe of the upstream', async () => {
    const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM: upstreamUrl }, 60_000);
    const before = pings;
    const answers = await Promise.all(Array.from({ length: 5 }, () => readyz(gateway)));
    answers.push(await readyz(gateway));
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(pings - before, 1);
  });

  it('a stdio upstream: ready when its program can be started, without starting it', async () => {
    const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}` });
    const ready = await readyz(gateway);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal((gateway.proxy as { processes?: number }).processes ?? 0, 0);
  });

  it('a stdio upstream whose program is gone: 503 naming the setting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readyz-'));
    try {
      const script = join(dir, 'server.sh');
      writeFileSync(script, `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(NODE_SERVER)}\n`);
      chmodSync(script, 0o755);
      const gateway = await gatewayFor({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM_COMMAND: quote(script) });
      assert.equal((await readyz(gateway)).status, 200);
      rmSync(script);
      const ready = await readyz(gateway);
      assert.equal(ready.status, 503);
      assert.equal(ready.body.upstream.ok, false);
      assert.match(ready.body.upstream.reason, /MCP_AUTH_UPSTREAM_COMMAND/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
