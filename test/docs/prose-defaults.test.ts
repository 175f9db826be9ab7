// Defaults the security and DPoP pages state in prose are the ones the code uses: a default changed in the code
// fails here until the page says the same. (Settings with a variable or flag are documented in the generated
// configuration page instead; these have none, or are quoted for the reasoning around them.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DEFAULT_CLOCK_TOLERANCE_SECONDS } from '../../src/core/token/create-token-verifier.js';
import { DPOP_PROOF_WINDOW_SECONDS } from '../../src/core/dpop/dpop-proof.js';
import { DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS, DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS, INTROSPECTION_REFUSALS_MAX_ENTRIES } from '../../src/core/token/introspection-bounds.js';
import { DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS } from '../../src/core/token/introspection-verifier.js';
import { DEFAULT_RATE_LIMITER_MAX_BYTES, DEFAULT_RATE_LIMITER_MAX_ENTRIES, RATE_LIMITER_ENTRY_OVERHEAD_BYTES } from '../../src/core/limits/rate-limiter.js';
import { DEFAULT_REPLAY_CACHE_MAX_ENTRIES, DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER } from '../../src/core/limits/replay-cache.js';
import { DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER } from '../../src/redis/redis-stores.js';
import { HEADERS_TIMEOUT_MS } from '../../src/gateway/server/start-gateway.js';

const page = (name: string): string => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');
/** `n` as the pages write it: a space between thousands. */
const spelt = (n: number): string => n.toLocaleString('en-US').replace(/,/g, ' ');

test('security.md: the gateway header time and the introspection reuse', () => {
  const security = page('security.md');
  assert.ok(security.includes(`the header time (${HEADERS_TIMEOUT_MS / 1000} s)`), 'the header time');
  assert.ok(security.includes(`(${DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS} s by default,`), 'the introspection cache TTL');
});

test('security.md: the rate limiter and introspection bounds', () => {
  const security = page('security.md');
  assert.ok(security.includes(`bounded in entries (${spelt(DEFAULT_RATE_LIMITER_MAX_ENTRIES)})`), 'the limiter entries');
  assert.ok(security.includes(`plus ${RATE_LIMITER_ENTRY_OVERHEAD_BYTES} bytes`), 'the counter overhead');
  assert.ok(security.includes(`default bound is ${DEFAULT_RATE_LIMITER_MAX_BYTES / 1_048_576} MiB`), 'the limiter bytes');
  assert.ok(security.includes(`is reused for ${DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS} s`), 'the refusal TTL');
  assert.ok(security.includes(`at most ${spelt(INTROSPECTION_REFUSALS_MAX_ENTRIES)} refusals`), 'the refusal cache size');
  assert.ok(security.includes(`default \`${DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS}\``), 'the refusals per address');
});

test('dpop.md: the proof window and the replay cache size', () => {
  const dpop = page('dpop.md');
  assert.ok(dpop.includes(`\`iat\` within ${DPOP_PROOF_WINDOW_SECONDS} s of the server's clock in the past`), 'the proof window');
  assert.ok(dpop.includes(`up to ${spelt(DEFAULT_REPLAY_CACHE_MAX_ENTRIES)} \`jti\`s`), 'the replay cache size');
  assert.ok(dpop.includes(`${spelt(DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER)} live \`jti\`s by default`), "a caller's share");
  assert.ok(dpop.includes(`(\`replayCacheMaxPerCaller\`, default ${spelt(DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER)},`), "a caller's share in Redis");
  assert.ok(dpop.includes(`at most ${DPOP_PROOF_WINDOW_SECONDS + 2 * DEFAULT_CLOCK_TOLERANCE_SECONDS} s with the default tolerance`), 'the longest a jti is held');
  assert.ok(dpop.includes(`\`clockToleranceSeconds\` (${DEFAULT_CLOCK_TOLERANCE_SECONDS} s by default)`), 'the allowance ahead');
});

test('security.md: the DPoP replay cache bounds', () => {
  const security = page('security.md');
  assert.ok(security.includes(`\`maxEntries\` \`jti\`s (${spelt(DEFAULT_REPLAY_CACHE_MAX_ENTRIES)} by default)`), 'the replay cache size');
  assert.ok(security.includes(`1 % of \`maxEntries\` by default (${spelt(DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER)})`), "a caller's share");
  assert.ok(security.includes(`\`replayCacheMaxPerCaller\`, ${spelt(DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER)} by default`), "a caller's share in Redis");
  assert.ok(security.includes(`an entry lives at most ${DPOP_PROOF_WINDOW_SECONDS + 2 * DEFAULT_CLOCK_TOLERANCE_SECONDS} s (with the ${DEFAULT_CLOCK_TOLERANCE_SECONDS} s default)`), 'the longest a jti is held');
});
