// The per-tool rate limiter under a flood of made-up tool names through the node:http pipeline: with
// `rateLimits.tools["*"]`, every unique name is counted apart, so each one takes a counter. Counters are keyed by a
// fixed-size digest whatever the name's length; from half full the flooding caller gets no new counter (its share
// is 1 %), so the store keeps room for everyone else and nobody's count is evicted for the flood.
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
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, rateLimiter: watching, policy: { rateLimits: { tools: { '*': '5/min' } } } });
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
  test('each name costs a counter of fixed size; from half full the flooding caller gets no new one, and nobody is evicted for it', { timeout: 120_000 }, async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'mallory', client_id: 'app' });
    const NAME_BYTES = 200_000;
    const REQUESTS = 300;
    const statuses: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const name = `${String(i).padStart(6, '0')}${'x'.repeat(NAME_BYTES)}`;
      const answer = await postMcp(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: {} } }, token, V);
      statuses.push(answer.status);
      if (answer.status === 429) assert.match(answer.json.error.message, /5\/min calls of tool "\d{6}x{58}…" per caller \(the limit of "\*"\)/);
      else assert.equal(answer.status, 200, answer.text.slice(0, 300));
    }
    assert.ok(longestKey <= 43, `counted under keys of ${longestKey} characters, expected a 43-character digest`);
    // Each name is counted apart, as "*" says, until the store is half full; then the caller holds far more than its
    // 1 % and every further made-up name is refused for one window, with nothing evicted to make room for it.
    const admitted = statuses.indexOf(429);
    assert.ok(admitted > 10, `counted ${admitted} names apart before refusing`);
    assert.ok(statuses.slice(admitted).every((status) => status === 429), 'refused from then on');
    const entry = 24 + 43 + RATE_LIMITER_ENTRY_OVERHEAD_BYTES;
    assert.equal(limiter.size, admitted);
    assert.ok(limiter.bytes >= MAX_BYTES / 2 && limiter.bytes <= MAX_BYTES / 2 + entry + RATE_LIMITER_CALLER_OVERHEAD_BYTES, `held ${limiter.bytes} bytes: about half of ${MAX_BYTES}`);
    assert.ok(mostBytes <= MAX_BYTES);
  });

  test('a name still gets its own count: the limit holds for a long name, called again', async () => {
    const token = await issuer.sign({ aud: RESOURCE, sub: 'trent', client_id: 'app' });
    const name = 'y'.repeat(300_000);
    const call = (id: number) => postMcp(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, token, V);
    for (let i = 0; i < 5; i++) assert.equal((await call(i)).status, 200);
    const refused = await call(5);
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error.code, -31429);
    assert.match(refused.json.error.message, /5\/min calls of tool "y{64}…" per caller \(the limit of "\*"\)/);
  });
});
