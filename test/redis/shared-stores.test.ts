// Rate limits and the DPoP replay cache shared through a real redis-server by two guard instances (two replicas),
// each with its own connection: one limit for both, per-tool limits, a proof replayed to the other replica
// refused, and Redis stopped mid-test: per-process limits with one warning (fallback), or 503 (closed), never a hang.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../src/core/kernel/decision.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { ReplayShareExceededError } from '../../src/core/limits/replay-cache.js';
import { createRedisStores, type RedisFailureMode, type RedisStores } from '../../src/redis/redis-stores.js';
import { redactRedisUrl } from '../../src/redis/redis-url.js';
import { makeDpopKey, signDpopProof, type DpopKey } from '../helpers/dpop.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp, send } from '../helpers/http-client.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../helpers/redis-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;

interface Replica {
  url: string;
  stores: RedisStores;
  warnings: string[];
  decisions: DecisionEvent[];
  close(): Promise<void>;
}

let issuer: TestIssuer;
let redis: TestRedis;
let key: DpopKey;

async function startReplica(failure: RedisFailureMode, prefix: string, toolLimits: Record<string, string> = { notes_add: '1/min' }): Promise<Replica> {
  const warnings: string[] = [];
  const decisions: DecisionEvent[] = [];
  const stores = await createRedisStores({ url: redis.url, failure, keyPrefix: prefix, onWarning: (m) => warnings.push(m) });
  const guard = createGuard({
    issuer: issuer.issuer,
    resource: RESOURCE,
    rateLimit: '3/min',
    policy: { rateLimits: { tools: toolLimits } },
    rateLimiter: stores.rateLimiter,
    dpopReplayCache: stores.replayCache,
    onDecision: (event) => decisions.push(event),
  });
  const pipeline = createRequestPipeline(guard, (message) => ({ jsonrpc: '2.0', id: (message as { id: number }).id, result: {} }));
  const server: Server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    stores,
    warnings,
    decisions,
    async close() {
      server.closeAllConnections();
      server.close();
      await stores.close();
    },
  };
}

const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const V = { 'mcp-protocol-version': '2025-11-25' };
const token = (sub: string) => issuer.sign({ aud: RESOURCE, sub, client_id: 'app' });

describe('shared stores in Redis', { skip, timeout: 60_000 }, () => {
  before(async () => {
    issuer = await startTestIssuer();
    redis = await startTestRedis();
    key = await makeDpopKey();
  });
  after(async () => {
    await removeTestRedis(redis);
    await issuer?.close();
  });

  test('two replicas share one caller-wide limit and one per-tool limit', async () => {
    const [a, b] = await Promise.all([startReplica('fallback', 'shared1:'), startReplica('fallback', 'shared1:')]);
    try {
      const alice = await token('alice');
      assert.equal((await postMcp(a.url, call(1, 'notes_add'), alice, V)).status, 200);
      const tool = await postMcp(b.url, call(2, 'notes_add'), alice, V);
      assert.equal(tool.status, 429, 'the tool call on the other replica counts against the same limit');
      assert.equal(tool.json.id, 2);
      assert.ok(Number(tool.headers['retry-after']) >= 1 && Number(tool.headers['retry-after']) <= 60);
      assert.equal(b.decisions.at(-1)?.reason, 'rate_limited');
      // That refusal still counted against the caller's 3/min: the third is the last, on either replica.
      assert.equal((await postMcp(a.url, call(3, 'notes_list'), alice, V)).status, 200);
      const over = await postMcp(b.url, call(5, 'notes_list'), alice, V);
      assert.equal(over.status, 429);
      assert.match(over.json.error.message, /3\/min requests per caller/);
      const bob = await token('bob');
      assert.equal((await postMcp(b.url, call(4, 'notes_add'), bob, V)).status, 200, 'another caller has counts of its own');
      assert.deepEqual([...a.warnings, ...b.warnings], []);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('keys are of fixed size whatever the tool name: a flood of long made-up names adds short keys only', async () => {
    const replica = await startReplica('closed', 'longnames:', { '*': '2/min' });
    const { Redis } = await import('ioredis');
    const client = new Redis(redis.url, { lazyConnect: true });
    try {
      await client.connect();
      const mallory = await token('mallory');
      for (let i = 0; i < 6; i++) {
        const name = `${i}-${'n'.repeat(200_000)}`;
        assert.equal((await postMcp(replica.url, call(i, name), mallory, V)).status, i < 3 ? 200 : 429);
      }
      const keys = await client.keys('longnames:*');
      // The caller's own count and one per tool called within it (3/min: a refused call adds no tool key), each
      // `longnames:rl:<limit>:<43-character digest>`.
      assert.equal(keys.length, 4);
      for (const key of keys) assert.match(key, /^longnames:rl:(2|3)\/min:[A-Za-z0-9_-]{43}$/);
    } finally {
      client.disconnect();
      await replica.close();
    }
  });

  test('a DPoP proof accepted by one replica is refused by the other', async () => {
    const [a, b] = await Promise.all([startReplica('fallback', 'shared2:'), startReplica('fallback', 'shared2:')]);
    try {
      const bound = await issuer.sign({ aud: RESOURCE, sub: 'dora', client_id: 'app', cnf: { jkt: key.thumbprint } });
      const proof = await signDpopProof(key, { htu: RESOURCE, token: bound });
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `DPoP ${bound}`, dpop: proof, ...V };
      const body = JSON.stringify(call(1, 'notes_list'));
      assert.equal((await send(a.url, { headers, body })).status, 200);
      const replay = await send(b.url, { headers, body });
      assert.equal(replay.status, 401);
      assert.equal(b.decisions.at(-1)?.reason, 'dpop_proof_replayed');
      // A fresh proof is accepted there.
      const fresh = await signDpopProof(key, { htu: RESOURCE, token: bound });
      assert.equal((await send(b.url, { headers: { ...headers, dpop: fresh }, body })).status, 200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('an expired claim is refused, and never written', async () => {
    const stores = await createRedisStores({ url: redis.url, keyPrefix: 'shared3:', onWarning: () => {} });
    try {
      assert.equal(await stores.replayCache.claim('old', Date.now() - 1), false);
      assert.equal(await stores.replayCache.claim('old', Date.now() + 60_000), true, 'the refused claim left nothing behind');
      assert.equal(await stores.replayCache.claim('new', Date.now() + 60_000), true);
      assert.equal(await stores.replayCache.claim('new', Date.now() + 60_000), false);
    } finally {
      await stores.close();
    }
  });

  test("each caller holds at most its share of live jtis, across replicas; past it a ReplayShareExceededError says when room frees up, others unaffected", async () => {
    const [a, b] = await Promise.all(
      [0, 1].map(() => createRedisStores({ url: redis.url, keyPrefix: 'shared5:', replayCacheMaxPerCaller: 2, onWarning: () => {} })),
    );
    try {
      const now = Date.now();
      assert.equal(await a!.replayCache.claim('m1', now + 60_000, 'mallory'), true);
      assert.equal(await b!.replayCache.claim('m2', now + 5_000, 'mallory'), true, 'an earlier expiry claimed later');
      const refused = await Promise.resolve(b!.replayCache.claim('m3', now + 60_000, 'mallory')).catch((e: unknown) => e);
      assert.ok(refused instanceof ReplayShareExceededError, String(refused));
      assert.equal(refused.maxPerCaller, 2);
      assert.ok(refused.retryAfterMs > 3_000 && refused.retryAfterMs <= 5_000, `the earliest expiry, m2: ${refused.retryAfterMs}`);
      assert.equal(await a!.replayCache.claim('m1', now + 60_000, 'mallory'), false, 'a replay is a replay, whatever the share');
      assert.equal(await a!.replayCache.claim('a1', now + 60_000, 'alice'), true, 'another caller is served');
      assert.equal(await a!.replayCache.claim('m3', now + 60_000), true, 'a claim naming no caller counts against no share');
      assert.equal(await b!.replayCache.claim('m3', now + 60_000, 'mallory'), false, 'and is seen by a claim that names one');
      // Each caller's set expires with its last claim: nothing is left behind in Redis.
      const { Redis } = await import('ioredis');
      const direct = new Redis(redis.url);
      try {
        const ttl = await direct.pttl('shared5:dpop-caller:mallory');
        assert.ok(ttl > 55_000 && ttl <= 60_000, `pttl ${ttl}`);
        assert.equal(await direct.zcard('shared5:dpop-caller:mallory'), 2);
      } finally {
        await direct.quit();
      }
      await assert.rejects(createRedisStores({ url: redis.url, replayCacheMaxPerCaller: 0 }), /options\.replayCacheMaxPerCaller: must be a whole number from 1/);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
    }
  });

  test('Redis stopped: fallback counts per process with one warning, closed answers 503, DPoP 503, nothing hangs; back when Redis is', async () => {
    const open = await startReplica('fallback', 'shared4:');
    const closed = await startReplica('closed', 'shared4:');
    try {
      const erin = await token('erin');
      assert.equal((await postMcp(open.url, call(1, 'notes_list'), erin, V)).status, 200);
      await redis.stop();
      // fallback: the per-process limit (3/min, one of which Redis counted, so three more here).
      for (let i = 0; i < 3; i++) assert.equal((await postMcp(open.url, call(10 + i, 'notes_list'), erin, V)).status, 200);
      assert.equal((await postMcp(open.url, call(13, 'notes_list'), erin, V)).status, 429);
      assert.equal(open.warnings.length, 1, open.warnings.join('\n'));
      assert.match(open.warnings[0]!, /Redis at redis:\/\/127\.0\.0\.1:\d+ is unavailable .*rate limits are counted per process/);
      // closed: 503 with Retry-After, the JSON-RPC id, and its own reason.
      const refused = await postMcp(closed.url, call(20, 'notes_list'), erin, V);
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '5');
      assert.equal(refused.json.id, 20);
      assert.equal(closed.decisions.at(-1)?.reason, 'rate_limiter_unavailable');
      assert.match(closed.warnings.join('\n'), /refused with 503/);
      // The replay cache fails closed in both modes.
      const bound = await issuer.sign({ aud: RESOURCE, sub: 'erin', client_id: 'app', cnf: { jkt: key.thumbprint } });
      const proof = await signDpopProof(key, { htu: RESOURCE, token: bound });
      const dpop = await send(open.url, {
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `DPoP ${bound}`, dpop: proof, ...V },
        body: JSON.stringify(call(30, 'notes_list')),
      });
      assert.equal(dpop.status, 503);
      assert.equal(open.decisions.at(-1)?.reason, 'dpop_replay_cache_unavailable');
      // Every request above was answered, with the status of an outage: none waited on the dead Redis for good
      // (the suite's timeout bounds them, no speed is claimed).

      await redis.start();
      const deadline = Date.now() + 15_000;
      let status = 0;
      while (Date.now() < deadline && (status = (await postMcp(closed.url, call(40, 'notes_list'), erin, V)).status) === 503) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 200, 'the closed replica serves again once Redis is back');
      assert.match(closed.warnings.at(-1)!, /is back/);
    } finally {
      await Promise.all([open.close(), closed.close()]);
    }
  });

  test('one slow command, then Redis answering again: "back" on the next command that succeeds, so a real stop is logged too', async () => {
    const stalled = await startTestRedis();
    const warnings: string[] = [];
    const stores = await createRedisStores({ url: stalled.url, commandTimeoutMs: 200, keyPrefix: 'slow:', onWarning: (m) => warnings.push(m) });
    const limit = { points: 100, windowMs: 60_000, text: '100/min' };
    try {
      assert.equal(await stores.rateLimiter.consume('frank', limit), 0);
      stalled.pause();
      try {
        assert.equal(await stores.rateLimiter.consume('frank', limit), 0, 'counted per process while Redis does not answer');
        await assert.rejects(Promise.resolve(stores.replayCache.claim('while-paused', Date.now() + 60_000)));
      } finally {
        stalled.resume();
      }
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, /is unavailable \(Command timed out\)/);
      // The connection never dropped, so no reconnection says so: the next command that works does.
      assert.equal(await stores.replayCache.claim('after', Date.now() + 60_000), true);
      assert.equal(warnings.length, 2, warnings.join('\n'));
      assert.match(warnings[1]!, /is back/);
      await stalled.stop();
      await assert.rejects(Promise.resolve(stores.replayCache.claim('stopped', Date.now() + 60_000)));
      assert.equal(warnings.length, 3, warnings.join('\n'));
      assert.match(warnings[2]!, /is unavailable/);
    } finally {
      await stores.close();
      await removeTestRedis(stalled);
    }
  });

  test('a Redis not up at start-up: a warning, the claims refused, then used once it is up', async () => {
    const late = await startTestRedis();
    await late.stop();
    const warnings: string[] = [];
    const stores = await createRedisStores({ url: late.url, connectTimeoutMs: 300, onWarning: (m) => warnings.push(m) });
    try {
      assert.match(warnings.join('\n'), /is unavailable/);
      await assert.rejects(Promise.resolve(stores.replayCache.claim('early', Date.now() + 5_000)));
      await late.start();
      const deadline = Date.now() + 15_000;
      let claimed = false;
      while (!claimed && Date.now() < deadline) {
        claimed = await Promise.resolve(stores.replayCache.claim(`late-${Date.now()}`, Date.now() + 5_000)).catch(() => false);
        if (!claimed) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(claimed, 'reconnected within the backoff');
      assert.match(warnings.at(-1)!, /is back/);
    } finally {
      await stores.close();
      await removeTestRedis(late);
    }
  });

  test('the URL is checked at start-up without repeating it, and redacted in messages', async () => {
    await assert.rejects(createRedisStores({ url: 'http://:hunter2@cache:6379', names: { url: 'MCP_AUTH_REDIS_URL' } }), (e: Error) => /^MCP_AUTH_REDIS_URL: /.test(e.message) && !e.message.includes('hunter2'));
    await assert.rejects(createRedisStores({ url: redis.url, failure: 'open' as never }), /options.failure: must be fallback \(per-process limits while Redis is down\) or closed \(503\) \(got "open"\)/);
    assert.equal(redactRedisUrl('redis://user:hunter2@cache:6379/2?x=y'), 'redis://cache:6379/2');
    // An unreachable Redis at start-up: resolves after the connect timeout, with a warning naming no password.
    const warnings: string[] = [];
    const stores = await createRedisStores({ url: `redis://:hunter2@127.0.0.1:${redis.port + 1}`, connectTimeoutMs: 300, onWarning: (m) => warnings.push(m) });
    try {
      assert.equal(warnings.length, 1);
      assert.ok(!warnings[0]!.includes('hunter2'));
      await assert.rejects(Promise.resolve(stores.replayCache.claim('x', Date.now() + 1000)));
    } finally {
      await stores.close();
    }
  });
});
