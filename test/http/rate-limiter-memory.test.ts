// The per-tool rate limiter under a flood of made-up tool names through the node:http pipeline: with
// `rateLimits.tools["*"]`, every tool without a limit of its own is counted under the rule, so names the caller
// makes up add no counter; a named tool keeps its own. Counters are keyed by a fixed-size digest.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { RateLimit } from '../../src/core/limits/rate-limit.js';
import { RATE_LIMITER_CALLER_OVERHEAD_BYTES, RATE_LIMITER_ENTRY_OVERHEAD_BYTES, createMemoryRateLimiter, type MemoryRateLimiter, type RateLimiter } from '../../src/core/limits/rate-limiter.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const V = { 'mcp-protocol-version': '2025-11-25' };
/** Small enough that the flood below fills it several times over. */
const MAX_BYTES = 32 * 1024;

let issuer: TestIssuer;
let server: Server;
let url: string;
let limiter: MemoryRateLimiter;
let longestKey = 0;
let mostBytes = 0;

before(async () => {
  issuer = await startTestIssuer();
  limiter = createMemoryRateLimiter({ maxBytes: MAX_BYTES });
  // Sees every key the guard counts under, and what the store holds after each count.
  const watching: RateLimiter = {
    consume(key: string, limit: RateLimit, caller?: string) {
      longestKey = Math.max(longestKey, key.length);
      const waitMs = limiter.consume(key, limit, caller);
      mostBytes = Math.max(mostBytes, limiter.bytes);
      return waitMs;
    },
  };
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, rateLimiter: watching, policy: { rateLimits: { tools: { '*': '5/min', notes_add: '2/min' } } } });
  const pipeline = createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: { content: [] } }));
  server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await issuer?.close();
});

describe('a flood of unique, very long tool names under rateLimits.tools["*"]', () => {
  test('the names share the one count of "*": no counter per name, and the calls past the limit are refused', { timeout: 120_000 }, async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'mallory', client_id: 'app' });
    const NAME_BYTES = 200_000;
    const REQUESTS = 50;
    for (let i = 0; i < REQUESTS; i++) {
      const name = `${String(i).padStart(6, '0')}${'x'.repeat(NAME_BYTES)}`;
      const answer = await postMcp(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: {} } }, token, V);
      assert.equal(answer.status, i < 5 ? 200 : 429, answer.text.slice(0, 300));
      if (i === 5) assert.match(answer.json.error.message, /5\/min calls of tools under "\*" per caller/);
    }
    assert.ok(longestKey <= 43, `counted under keys of ${longestKey} characters, expected a 43-character digest`);
    assert.equal(limiter.size, 1, 'one counter: the caller under "*"');
    // The counter (its 43-character key and overhead) and the caller's record (its 43-character key and overhead).
    assert.equal(limiter.bytes, 2 * (24 + 43) + RATE_LIMITER_ENTRY_OVERHEAD_BYTES + RATE_LIMITER_CALLER_OVERHEAD_BYTES);
    assert.ok(mostBytes <= MAX_BYTES);
  });

  test('a named tool keeps a count of its own beside "*", whatever the caller called before', async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'trent', client_id: 'app' });
    const call = (id: number, name: string) => postMcp(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, token, V);
    for (let i = 0; i < 5; i++) assert.equal((await call(i, `other-${i}`)).status, 200);
    assert.equal((await call(5, 'y'.repeat(300_000))).status, 429, 'a long made-up name is one more call under "*"');
    assert.equal((await call(6, 'notes_add')).status, 200);
    assert.equal((await call(7, 'notes_add')).status, 200);
    const refused = await call(8, 'notes_add');
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error.code, -31429);
    assert.match(refused.json.error.message, /2\/min calls of tool "notes_add" per caller/);
  });
});
