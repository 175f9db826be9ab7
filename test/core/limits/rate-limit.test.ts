// Rate limits without a network: the one syntax, the bounded in-memory limiter, the policy's per-tool limits and
// the guard's step, which does not exist when no limit is set.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { ConfigurationError, RateLimitedError, RATE_LIMITED_JSONRPC_CODE } from '../../../src/core/kernel/errors.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';
import { parseRateLimit } from '../../../src/core/limits/rate-limit.js';
import { createRateLimitCheck, rateLimitKey, toolRateLimitKey } from '../../../src/core/limits/rate-limit-check.js';
import { RATE_LIMITER_ENTRY_OVERHEAD_BYTES, createMemoryRateLimiter } from '../../../src/core/limits/rate-limiter.js';

const auth = (sub: string | undefined, clientId = 'app', iss = 'https://as.example'): AuthInfo =>
  ({ token: 't', clientId, scopes: [], extra: { sub, iss, claims: {} } }) as unknown as AuthInfo;
const call = (name: string, id = 1) => ({ jsonrpc: '2.0' as const, id, method: 'tools/call', params: { name, arguments: {} } });

describe('parseRateLimit', () => {
  test('count per second, minute or hour, in any spelling of the unit', () => {
    assert.deepEqual(parseRateLimit('120/min', 'X'), { points: 120, windowMs: 60_000, text: '120/min' });
    assert.deepEqual(parseRateLimit(' 10 / s ', 'X'), { points: 10, windowMs: 1_000, text: '10/s' });
    assert.deepEqual(parseRateLimit('5000/hour', 'X'), { points: 5000, windowMs: 3_600_000, text: '5000/h' });
    assert.deepEqual(parseRateLimit('3/MINUTE', 'X'), { points: 3, windowMs: 60_000, text: '3/min' });
  });
  for (const bad of ['0/min', '120', '120/day', '/min', '1.5/s', '-1/s', '99999999999/s', 120, undefined]) {
    test(`refuses ${JSON.stringify(bad)}, naming the setting`, () => {
      assert.throws(() => parseRateLimit(bad, 'MCP_AUTH_RATE_LIMIT'), (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_RATE_LIMIT' && /120\/min/.test(e.message));
    });
  }
});

describe('createMemoryRateLimiter', () => {
  test('a fixed window: the limit, then the time left, then a new window', () => {
    let now = 1_000_000;
    const limiter = createMemoryRateLimiter({ now: () => now });
    const limit = parseRateLimit('2/s', 'X');
    assert.equal(limiter.consume('a', limit), 0);
    now += 300;
    assert.equal(limiter.consume('a', limit), 0);
    assert.equal(limiter.consume('a', limit), 700);
    assert.equal(limiter.consume('b', limit), 0, 'another key has its own count');
    assert.equal(limiter.consume('a', parseRateLimit('5/s', 'X')), 0, 'another limit has its own count');
    now += 700;
    assert.equal(limiter.consume('a', limit), 0, 'the window ended');
  });

  test('bounded in entries: ended windows go first, then the oldest live one', () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ maxEntries: 3, now: () => now });
    const limit = parseRateLimit('1/s', 'X');
    for (const key of ['a', 'b', 'c']) limiter.consume(key, limit);
    assert.equal(limiter.size, 3);
    assert.ok(limiter.consume('a', limit) > 0);
    limiter.consume('d', limit);
    assert.equal(limiter.size, 3);
    assert.equal(limiter.consume('a', limit), 0, 'a, the oldest, was forgotten to make room');
    now = 5_000;
    for (const key of ['e', 'f', 'g']) limiter.consume(key, limit);
    assert.equal(limiter.size, 3);
  });

  test('maxEntries and maxBytes are checked', () => {
    assert.throws(() => createMemoryRateLimiter({ maxEntries: 0 }), ConfigurationError);
    assert.throws(() => createMemoryRateLimiter({ maxBytes: 0 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'maxBytes');
    assert.throws(() => createMemoryRateLimiter({ maxBytes: 1.5 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'maxBytes');
  });

  test('bounded in bytes: each counter costs its key and a fixed overhead; the oldest go first', () => {
    let now = 0;
    const entry = (key: string) => 24 + key.length + RATE_LIMITER_ENTRY_OVERHEAD_BYTES;
    const limiter = createMemoryRateLimiter({ maxBytes: 3 * entry('k0'), now: () => now });
    const limit = parseRateLimit('1/min', 'X');
    for (const key of ['k0', 'k1', 'k2']) limiter.consume(key, limit);
    assert.deepEqual([limiter.size, limiter.bytes], [3, 3 * entry('k0')]);
    now = 10;
    limiter.consume('k3', limit);
    assert.deepEqual([limiter.size, limiter.bytes], [3, 3 * entry('k0')]);
    assert.equal(limiter.consume('k0', limit), 0, 'k0, the oldest, was forgotten');
    assert.ok(limiter.consume('k3', limit) > 0, 'k3 is still counted');
    // A long key costs what it holds: room is made for it, two counters of short keys leave.
    const long = 'L'.repeat(entry('k0'));
    assert.equal(limiter.consume(long, limit), 0);
    assert.deepEqual([limiter.size, limiter.bytes], [2, entry('k0') + entry(long)]);
    // Characters beyond Latin-1 take two bytes each.
    const wide = createMemoryRateLimiter({ now: () => now });
    wide.consume('ЖЖ', limit);
    assert.equal(wide.bytes, 24 + 4 + RATE_LIMITER_ENTRY_OVERHEAD_BYTES);
    // A key larger than the whole store is never held (no guard key is: theirs are 43-character digests).
    assert.equal(limiter.consume(long.repeat(4), limit), 0);
    assert.equal(limiter.consume(long.repeat(4), limit), 0);
    assert.equal(limiter.size, 2, 'and it evicted nobody');
  });

  test('ended windows go before the oldest live one, whatever their length', () => {
    let now = 0;
    const hour = parseRateLimit('1/h', 'X');
    const second = parseRateLimit('1/s', 'X');
    const limiter = createMemoryRateLimiter({ maxEntries: 3, now: () => now });
    limiter.consume('long-lived', hour);
    limiter.consume('a', second);
    now = 500;
    limiter.consume('b', second);
    now = 1_200;
    // 'a' ended; 'long-lived' is the oldest but live: 'a' goes.
    limiter.consume('c', second);
    assert.equal(limiter.size, 3);
    assert.ok(limiter.consume('long-lived', hour) > 0, 'the hour window was kept');
    now = 1_400;
    // Nothing ended: the oldest live window (the hour's, started at 0) goes.
    limiter.consume('d', second);
    assert.equal(limiter.consume('long-lived', hour), 0, 'the oldest was forgotten');
  });

  test("from half full, each caller holds at most its share (1 %): one caller's flood never evicts another's counters", () => {
    const limiter = createMemoryRateLimiter({ maxEntries: 400 });
    const limit = parseRateLimit('5/min', 'X');
    // Below half full nobody is limited: one caller alone takes 200 counters (half the store).
    for (let i = 0; i < 200; i++) assert.equal(limiter.consume(`m-${i}`, limit, 'mallory'), 0);
    // Past half full, mallory holds far more than its share of 4: a new counter of its own is refused.
    assert.ok(limiter.consume('m-new', limit, 'mallory') > 0, 'refused rather than held');
    // Others still get theirs, up to their own shares; nothing of theirs is evicted.
    for (let c = 0; c < 50; c++) for (let i = 0; i < 4; i++) assert.equal(limiter.consume(`c${c}-${i}`, limit, `caller-${c}`), 0);
    assert.ok(limiter.consume('c0-4', limit, 'caller-0') > 0, 'a fifth counter of one caller, past its share of 4');
    assert.equal(limiter.size, 400);
    for (let i = 0; i < 400; i++) assert.ok(limiter.consume(`m2-${i}`, limit, 'mallory') > 0);
    for (let c = 0; c < 50; c++) assert.equal(limiter.peek(`c${c}-0`, limit), 0);
    for (let c = 0; c < 50; c++) for (let i = 0; i < 4; i++) limiter.consume(`c${c}-${i}`, limit, `caller-${c}`);
    assert.equal(limiter.consume('c7-3', limit, 'caller-7'), 0, 'its counters were all kept: this is its third request in the window');
    assert.equal(limiter.size, 400);
    // A counter of a caller within its share still makes room in a full store, evicting the oldest.
    assert.equal(limiter.consume('newcomer', limit, 'newcomer'), 0);
    assert.equal(limiter.size, 400);
    // Without a caller a key is counted as before, unshared.
    assert.equal(createMemoryRateLimiter({ maxEntries: 4 }).consume('x', limit), 0);
  });

  test('a caller is charged its key, once for all its counters, within maxBytes', () => {
    const limit = parseRateLimit('5/min', 'X');
    const limiter = createMemoryRateLimiter({ maxBytes: 4096 });
    limiter.consume('k1', limit, 'caller');
    const one = limiter.bytes;
    limiter.consume('k2', limit, 'caller');
    assert.equal(limiter.bytes - one, 24 + 2 + RATE_LIMITER_ENTRY_OVERHEAD_BYTES, 'a second counter of the same caller costs no second caller record');
    for (let i = 0; i < 1000; i++) limiter.consume(`k-${i}`, limit, `caller-${i}`);
    assert.ok(limiter.bytes <= 4096, `${limiter.bytes} bytes`);
  });

  test('ended windows are swept as new ones start, so memory falls back after a flood', () => {
    let now = 0;
    const limiter = createMemoryRateLimiter({ now: () => now });
    const limit = parseRateLimit('10/s', 'X');
    for (let i = 0; i < 1_000; i++) limiter.consume(`flood-${i}`, limit);
    assert.equal(limiter.size, 1_000);
    now = 2_000;
    limiter.consume('next', limit);
    assert.deepEqual([limiter.size, limiter.bytes], [1, 24 + 4 + RATE_LIMITER_ENTRY_OVERHEAD_BYTES]);
  });
});

describe('rateLimitKey', () => {
  test('the identified caller is callerKey; tokens with neither subject nor client share one key per issuer', () => {
    assert.notEqual(rateLimitKey(auth('alice')), rateLimitKey(auth('bob')));
    assert.notEqual(rateLimitKey(auth('alice', 'app')), rateLimitKey(auth('alice', 'other')));
    assert.equal(rateLimitKey(auth(undefined, '')), rateLimitKey(auth('', '')));
    assert.notEqual(rateLimitKey(auth(undefined, '')), rateLimitKey(auth(undefined, '', 'https://other.example')));
    assert.notEqual(rateLimitKey(auth(undefined, '')), rateLimitKey(auth(undefined, 'x')));
  });

  test('a fixed-size digest, however long the claims; a tool is counted under a digest of the caller and its name', () => {
    const big = rateLimitKey(auth('s'.repeat(100_000), 'c'.repeat(100_000), `https://as.example/${'i'.repeat(100_000)}`));
    assert.match(big, /^[A-Za-z0-9_-]{43}$/);
    const caller = rateLimitKey(auth('alice'));
    assert.match(toolRateLimitKey(caller, 'n'.repeat(800_000)), /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(toolRateLimitKey(caller, 'a'), toolRateLimitKey(caller, 'b'));
    assert.notEqual(toolRateLimitKey(caller, 'a'), toolRateLimitKey(rateLimitKey(auth('bob')), 'a'));
    assert.notEqual(toolRateLimitKey(caller, 'a'), caller);
  });
});

describe('createRateLimitCheck', () => {
  test('no limit, no step', () => {
    assert.equal(createRateLimitCheck({ limiter: createMemoryRateLimiter(), toolLimits: new Map() }), undefined);
    assert.equal(createGuard({ issuer: 'https://as.example', resource: 'https://mcp.example/mcp' }).checkRateLimit, undefined);
  });

  test('a tool-limit resolver, when given, is asked instead of the map, each tool counted apart', () => {
    const asked: string[] = [];
    const check = createRateLimitCheck({
      toolLimits: new Map([['notes__add', parseRateLimit('5/min', 'X')]]),
      toolLimit: (name) => (asked.push(name), name.startsWith('py__') ? { rule: 'py__*', limit: parseRateLimit('1/min', 'X') } : undefined),
      limiter: createMemoryRateLimiter(),
    })!;
    assert.equal(check(call('py__run'), auth('alice')), undefined);
    assert.throws(() => check(call('py__run'), auth('alice')), /1\/min calls of tool "py__run" per caller \(the limit of "py__\*"\)/);
    assert.equal(check(call('py__other'), auth('alice')), undefined, 'another tool, another count');
    for (let i = 0; i < 3; i++) assert.equal(check(call('notes__add'), auth('alice')), undefined, 'the resolver said no limit');
    assert.deepEqual(asked, ['py__run', 'py__run', 'py__other', 'notes__add', 'notes__add', 'notes__add']);
    assert.equal(typeof createRateLimitCheck({ toolLimit: () => undefined, limiter: createMemoryRateLimiter() }), 'function', 'a resolver alone makes a step');
  });

  test('caller-wide and per-tool limits, without a promise in memory; 429 with Retry-After', () => {
    const check = createRateLimitCheck({
      callerLimit: parseRateLimit('3/min', 'X'),
      toolLimits: new Map([['notes_add', parseRateLimit('1/min', 'X')]]),
      limiter: createMemoryRateLimiter(),
    })!;
    assert.equal(check(call('notes_add'), auth('alice')), undefined);
    assert.throws(() => check(call('notes_add'), auth('alice')), (e: unknown) => {
      assert.ok(e instanceof RateLimitedError);
      assert.equal(e.status, 429);
      assert.equal(e.reason, 'rate_limited');
      assert.equal(e.jsonRpcCode, RATE_LIMITED_JSONRPC_CODE);
      assert.ok(Number(e.headers['Retry-After']) >= 59 && Number(e.headers['Retry-After']) <= 60);
      assert.match(e.message, /1\/min calls of tool "notes_add"/);
      return true;
    });
    assert.equal(check(call('notes_add'), auth('bob')), undefined, 'per caller');
    assert.equal(check(call('notes_list'), auth('alice')), undefined, 'the third of alice, another tool');
    assert.throws(() => check(call('notes_list'), auth('alice')), /3\/min requests per caller/);
  });

  test('a limiter that throws or rejects is answered 503', async () => {
    const throwing = createRateLimitCheck({ callerLimit: parseRateLimit('1/s', 'X'), limiter: { consume: () => { throw new Error('down'); } } })!;
    assert.throws(() => throwing(undefined, auth('a')), (e: any) => e.status === 503 && e.reason === 'rate_limiter_unavailable' && e.headers['Retry-After'] === '5');
    const rejecting = createRateLimitCheck({ callerLimit: parseRateLimit('1/s', 'X'), limiter: { consume: () => Promise.reject(new Error('down')) } })!;
    await assert.rejects(async () => rejecting(undefined, auth('a')), (e: any) => e.status === 503);
    const refusing = createRateLimitCheck({ callerLimit: parseRateLimit('1/s', 'X'), limiter: { consume: () => Promise.resolve(1500) } })!;
    await assert.rejects(async () => refusing(undefined, auth('a')), (e: any) => e.status === 429 && e.headers['Retry-After'] === '2');
  });
});

describe('rateLimits in the policy and MCP_AUTH_RATE_LIMIT', () => {
  test('per-tool limits compile; unknown keys and bad values fail naming the path', () => {
    const policy = compilePolicy({ rateLimits: { tools: { notes_add: '10/min', constructor: '1/s' } } });
    assert.equal(policy.toolRateLimits.get('notes_add')?.text, '10/min');
    assert.equal(policy.toolRateLimits.get('constructor')?.text, '1/s');
    assert.equal(compilePolicy({}).toolRateLimits.size, 0);
    const fails = (definition: unknown, setting: string, message: RegExp) =>
      assert.throws(() => compilePolicy(definition as never, 'MCP_AUTH_POLICY'), (e: unknown) => e instanceof ConfigurationError && e.setting === setting && message.test(e.message));
    fails({ rateLimits: { tool: {} } }, 'MCP_AUTH_POLICY.rateLimits', /unknown key "tool"/);
    fails({ rateLimits: { tools: { notes_add: '10/fortnight' } } }, 'MCP_AUTH_POLICY.rateLimits.tools.notes_add', /120\/min/);
    fails({ rateLimits: { tools: { 'notes-add': 10 } } }, 'MCP_AUTH_POLICY.rateLimits.tools["notes-add"]', /got 10/);
    fails({ rateLimits: [] }, 'MCP_AUTH_POLICY.rateLimits', /expected an object/);
  });

  test('"*" is the limit of every tool without one of its own, each tool counted apart, as "*" means elsewhere in the policy', () => {
    const guard = createGuard({ issuer: 'https://as.example', resource: 'https://mcp.example/mcp', policy: { rateLimits: { tools: { '*': '1/min', notes_add: '2/min' } } } });
    const check = guard.checkRateLimit!;
    assert.equal(check(call('echo'), auth('alice')), undefined);
    assert.throws(() => check(call('echo'), auth('alice')), /1\/min calls of tool "echo" per caller \(the limit of "\*"\)/, 'a tool with no limit of its own gets "*"');
    assert.equal(check(call('add'), auth('alice')), undefined, 'each tool has its own count under "*"');
    assert.equal(check(call('notes_add'), auth('alice')), undefined);
    assert.equal(check(call('notes_add'), auth('alice')), undefined, 'a named limit replaces "*"');
    assert.throws(() => check(call('notes_add'), auth('alice')), /2\/min calls of tool "notes_add" per caller;/);
    assert.equal(check({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, auth('alice')), undefined, 'only tools/call is counted per tool');
  });

  test('MCP_AUTH_RATE_LIMIT reaches the guard, and a bad one names the variable at start-up', () => {
    const env = { MCP_AUTH_ISSUER: 'https://as.example', MCP_AUTH_RESOURCE: 'https://mcp.example/mcp', MCP_AUTH_RATE_LIMIT: '2/s' };
    assert.equal(loadOptionsFromEnv(env).rateLimit, '2/s');
    assert.notEqual(createGuard(loadOptionsFromEnv(env)).checkRateLimit, undefined);
    assert.throws(
      () => createGuard(loadOptionsFromEnv({ ...env, MCP_AUTH_RATE_LIMIT: 'lots' }), { rateLimit: 'MCP_AUTH_RATE_LIMIT' }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_RATE_LIMIT',
    );
    assert.throws(() => createGuard({ issuer: 'https://as.example', resource: 'https://mcp.example/mcp', rateLimit: '1/s', rateLimiter: {} as never }), /options.rateLimiter/);
  });
});
