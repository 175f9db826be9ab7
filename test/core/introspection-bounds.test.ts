// The bounds on introspection calls without a network: refusals reused for a short time and bounded, a token not
// valid yet never reused, calls counted per client address (IPv6 per /64), and the setting checked.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigurationError, InvalidTokenError, RateLimitedError } from '../../src/core/errors.js';
import { INTROSPECTION_REFUSALS_MAX_BYTES, INTROSPECTION_REFUSALS_MAX_ENTRIES, createIntrospectionBounds } from '../../src/core/introspection-bounds.js';
import { loadOptionsFromEnv } from '../../src/core/load-options-from-env.js';

describe('createIntrospectionBounds', () => {
  test('a refusal is reused for its TTL, as a new error each time; a token not valid yet is never reused', () => {
    let now = 0;
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, callsPerAddress: false, now: () => now });
    bounds.remember('k', new InvalidTokenError('access token is not active', 'token_inactive'));
    bounds.remember('early', new InvalidTokenError('access token is not valid yet (nbf)', 'token_not_yet_valid'));
    const first = bounds.refused('k');
    assert.ok(first instanceof InvalidTokenError && first.reason === 'token_inactive' && first.status === 401);
    assert.notEqual(bounds.refused('k'), first);
    assert.equal(bounds.refused('early'), undefined);
    now = 10_000;
    assert.equal(bounds.refused('k'), undefined, 'expired after 10 s');
  });

  test('refusals are bounded in entries and bytes, whatever the messages', () => {
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, callsPerAddress: false });
    const long = 'x'.repeat(2_000);
    for (let i = 0; i < INTROSPECTION_REFUSALS_MAX_ENTRIES + 500; i++) bounds.remember(`key-${i}`, new InvalidTokenError(`${long}${i}`, 'token_audience'));
    assert.ok(bounds.refusals!.size <= INTROSPECTION_REFUSALS_MAX_ENTRIES);
    assert.ok(bounds.refusals!.bytes <= INTROSPECTION_REFUSALS_MAX_BYTES);
    assert.ok(bounds.refusals!.size < INTROSPECTION_REFUSALS_MAX_ENTRIES, 'the byte bound bit first');
  });

  test('no refusal is reused with a TTL of 0', () => {
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 0, callsPerAddress: false });
    bounds.remember('k', new InvalidTokenError('access token is not active', 'token_inactive'));
    assert.equal(bounds.refused('k'), undefined);
  });

  test('calls are counted per address (IPv6 per /64), 429 with Retry-After past the rate; no address, no bound', () => {
    let now = 0;
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, callsPerAddress: '2/s', now: () => now });
    bounds.admit({ clientAddress: '2001:db8::1' });
    bounds.admit({ clientAddress: '2001:db8::ffff:2' });
    assert.throws(() => bounds.admit({ clientAddress: '2001:db8::3' }), (e: unknown) => {
      assert.ok(e instanceof RateLimitedError);
      assert.equal(e.status, 429);
      assert.equal(e.headers['Retry-After'], '1');
      assert.equal(e.message, 'Too many new access tokens to check from this address: at most 2/s; retry later');
      return true;
    });
    bounds.admit({ clientAddress: '2001:db8:0:1::1' });
    bounds.admit({ clientAddress: '::ffff:192.0.2.1' });
    bounds.admit({ clientAddress: '192.0.2.1' });
    assert.throws(() => bounds.admit({ clientAddress: '192.0.2.1' }), RateLimitedError, 'an IPv4-mapped address is its IPv4 address');
    for (let i = 0; i < 5; i++) bounds.admit(undefined);
    now = 1_000;
    bounds.admit({ clientAddress: '2001:db8::3' });
  });

  test('callsPerAddress is checked, and read from MCP_AUTH_INTROSPECTION_RATE_LIMIT', () => {
    assert.throws(() => createIntrospectionBounds({ refusalTtlSeconds: 10, callsPerAddress: 'lots' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'introspection.callsPerAddress');
    const env = { MCP_AUTH_ISSUER: 'https://as.example', MCP_AUTH_RESOURCE: 'https://mcp.example/mcp', MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's' };
    assert.equal(loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: '5/min' }).introspection?.callsPerAddress, '5/min');
    assert.equal(loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'off' }).introspection?.callsPerAddress, false);
    assert.equal(loadOptionsFromEnv(env).introspection?.callsPerAddress, undefined);
    assert.throws(() => loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'lots' }), (e: unknown) => e instanceof ConfigurationError && /MCP_AUTH_INTROSPECTION_RATE_LIMIT/.test(e.message));
  });
});
