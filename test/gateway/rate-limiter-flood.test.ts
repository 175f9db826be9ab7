// The security review's attack on the per-tool rate limiter, through the whole gateway: a policy with
// `rateLimits.tools["*"]`, and one caller sending `tools/call` with unique, very long made-up names. Each name is
// counted apart, so the limiter used to keep every name as a key (200 KB each here) until the process ran out of
// heap. Now a counter costs a fixed-size digest: the heap the flood leaves behind stays small whatever the names.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const VERSION = '2025-11-25';
const NAME_BYTES = 200_000;
const REQUESTS = 300;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

describe('a flood of unique, very long tool names through the gateway', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let dir: string;

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown };
        const text = JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      });
    });
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    dir = mkdtempSync(join(tmpdir(), 'rate-limiter-flood-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ rateLimits: { tools: { '*': '5/min' } } }));
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, PORT: '0' });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test(`${REQUESTS} calls of unique ${NAME_BYTES / 1000} KB names leave the heap about where it was`, { timeout: 120_000 }, async () => {
    const token = await issuer.sign({ aud: gateway.resource, sub: 'mallory', client_id: 'app' });
    const headers = { 'mcp-protocol-version': VERSION };
    // One call first, so that what the gateway keeps for any caller (its token, its limiter entry) is in the baseline.
    const first = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'warm-up', arguments: {} } }, token, headers);
    assert.equal(first.status, 200, first.text);
    const baseline = heapAfterGc();
    for (let i = 1; i <= REQUESTS; i++) {
      const name = `${String(i).padStart(6, '0')}${'x'.repeat(NAME_BYTES - 6)}`;
      const res = await postMcp(gateway.resource, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: {} } }, token, headers);
      // Every name is new, so none is over its own limit: each call goes through.
      assert.equal(res.status, 200, res.text.slice(0, 300));
    }
    const grown = heapAfterGc() - baseline;
    // The names alone are 60 MB; the limiter used to keep them all (as UTF-16 JSON keys, more). Digests: a few hundred KB.
    assert.ok(grown < 8 * 1_048_576, `the heap grew by ${(grown / 1_048_576).toFixed(1)} MiB after ${REQUESTS} unique names`);
  });
});
