// The one set of setting validators: durations are bounded by what Node's timers can wait for, and every
// "parse this URL" of a setting goes through one parse with the caller's own message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTokenVerifier } from '../../../src/core/token/create-token-verifier.js';
import { createOriginCheck } from '../../../src/core/guard/origin-check.js';
import { checkDuration, MAX_TIMER_MS, parseAbsoluteUrl, parseIntegerOrOff, parseIntegerSetting, parseOffOr } from '../../../src/core/kernel/settings.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { checkRedisUrl } from '../../../src/redis/redis-url.js';
import { createUpstreamProxy } from '../../../src/gateway/upstream/http/upstream-proxy.js';

describe('checkDuration', () => {
  it('takes whole milliseconds from 1 (or the given minimum) to the longest timer, and the fallback when unset', () => {
    assert.equal(checkDuration(undefined, 'connectTimeoutMs', 10_000), 10_000);
    assert.equal(checkDuration(1, 'connectTimeoutMs', 10_000), 1);
    assert.equal(checkDuration(MAX_TIMER_MS, 'connectTimeoutMs', 10_000), MAX_TIMER_MS);
    assert.equal(checkDuration(0, 'x', 5, { min: 0 }), 0);
    for (const bad of [0, -1, 1.5, MAX_TIMER_MS + 1, Number.NaN, '10']) {
      assert.throws(() => checkDuration(bad, 'connectTimeoutMs', 10_000), { name: 'ConfigurationError', message: /^connectTimeoutMs: must be a whole number from 1 to 2147483647/ }, String(bad));
    }
  });

  it('bounds the timeouts a timer waits for: a timeout Node would fire after 1 ms is refused at start-up', () => {
    assert.throws(() => createUpstreamProxy({ upstream: 'http://127.0.0.1:1/mcp', connectTimeoutMs: MAX_TIMER_MS + 1 }), /^ConfigurationError: connectTimeoutMs: must be a whole number from 1 to 2147483647/);
    // The idle timeout has the same bound for the HTTP and the stdio upstream, and from the environment: a day.
    assert.throws(() => createUpstreamProxy({ upstream: 'http://127.0.0.1:1/mcp', idleTimeoutMs: 86_400_001 }), /^ConfigurationError: idleTimeoutMs: must be a whole number from 1 to 86400000/);
    assert.throws(
      () => createTokenVerifier({ issuer: 'https://as.example.com', resource: 'https://mcp.example.com/mcp', httpTimeoutMs: 3_000_000_000 }),
      /httpTimeoutMs: must be a whole number from 1 to 2147483647/,
    );
    // Counts and sizes are not durations: a session bound beyond the longest timer is a valid count.
    const proxy = createUpstreamProxy({ upstream: 'http://127.0.0.1:1/mcp', maxSessions: MAX_TIMER_MS + 1 });
    proxy.close();
  });
});

describe('parseAbsoluteUrl', () => {
  it('parses an absolute URL, or throws a ConfigurationError with the caller\'s message', () => {
    assert.equal(parseAbsoluteUrl('https://a.example.com/x', 'S', 'bad').href, 'https://a.example.com/x');
    assert.throws(() => parseAbsoluteUrl('/relative', 'MCP_AUTH_X', 'is not a URL'), { name: 'ConfigurationError', message: 'MCP_AUTH_X: is not a URL' });
  });

  it('keeps each caller\'s message: origins, and Redis URLs whose value is never repeated', () => {
    assert.throws(() => createOriginCheck(['not an origin'], 'https://mcp.example.com'), /"not an origin" is not an origin; use scheme:\/\/host\[:port\]/);
    assert.throws(
      () => checkRedisUrl('redis://:s3cret@[bad', 'MCP_AUTH_REDIS_URL'),
      (error: Error) => error.message.startsWith('MCP_AUTH_REDIS_URL: must be a Redis URL') && !error.message.includes('s3cret'),
    );
    assert.equal(checkRedisUrl('rediss://:pw@cache.example.com:6380/0', 'MCP_AUTH_REDIS_URL'), 'rediss://:pw@cache.example.com:6380/0');
  });
});

describe('parseOffOr: one rule for every setting that takes off', () => {
  const count = (value: unknown): number => parseIntegerSetting(String(value), 'S', 0, 100) as number;

  it('off in any case, and false, disable; anything else is read', () => {
    for (const zero of ['off', ' OFF ', false] as const) {
      assert.equal(parseOffOr(zero, 'S', 'off', count), undefined);
      assert.equal(parseOffOr(zero, 'S', 'refused', count), undefined);
    }
    assert.equal(parseOffOr('7', 'S', 'off', count), 7);
  });

  it("zero is off where the setting says so, and refused with 'use off to disable' where it means nothing", () => {
    for (const zero of [0, '0', '000', '0/s']) {
      assert.equal(parseOffOr(zero, 'S', 'off', count), undefined, String(zero));
      assert.throws(() => parseOffOr(zero, 'S', 'refused', count), (error: unknown) => error instanceof ConfigurationError && error.setting === 'S' && /use off to disable$/.test(error.message));
    }
  });

  it("a value the reader refuses names off as the other choice; 10 and 0.5 are not zero", () => {
    assert.throws(() => parseOffOr('many', 'S', 'off', count), (error: unknown) => error instanceof ConfigurationError && /from 0 to 100 \(got "many"\); or off to disable$/.test(error.message));
    assert.equal(parseOffOr('10', 'S', 'refused', count), 10);
    assert.throws(() => parseOffOr('0.5', 'S', 'refused', count), (error: unknown) => error instanceof ConfigurationError && /or off to disable$/.test(error.message));
  });
});

describe('parseIntegerOrOff: a count where zero means none', () => {
  it('off and 0 are 0, a count is itself, unset is undefined, anything else is refused naming off', () => {
    for (const zero of ['off', 'OFF', '0', '00']) assert.equal(parseIntegerOrOff(zero, 'S', 10), 0, zero);
    assert.equal(parseIntegerOrOff('7', 'S', 10), 7);
    assert.equal(parseIntegerOrOff(undefined, 'S', 10), undefined);
    assert.equal(parseIntegerOrOff('  ', 'S', 10), undefined);
    for (const bad of ['11', '-1', 'none', 'false']) {
      assert.throws(() => parseIntegerOrOff(bad, 'S', 10), (error: unknown) => error instanceof ConfigurationError && error.setting === 'S' && /from 0 to 10 \(got ".*"\); or off to disable$/.test(error.message), bad);
    }
  });
});
