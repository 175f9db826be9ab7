// Defaults the security and DPoP pages state in prose are the ones the code uses: a default changed in the code
// fails here until the page says the same. (Settings with a variable or flag are documented in the generated
// configuration page instead; these have none, or are quoted for the reasoning around them.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DPOP_PROOF_WINDOW_SECONDS } from '../../src/core/dpop-proof.js';
import { DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS } from '../../src/core/introspection-verifier.js';
import { DEFAULT_REPLAY_CACHE_MAX_ENTRIES } from '../../src/core/replay-cache.js';
import { HEADERS_TIMEOUT_MS } from '../../src/gateway/start-gateway.js';

const page = (name: string): string => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');
/** `n` as the pages write it: a space between thousands. */
const spelt = (n: number): string => n.toLocaleString('en-US').replace(/,/g, ' ');

test('security.md: the gateway header time and the introspection reuse', () => {
  const security = page('security.md');
  assert.ok(security.includes(`the header time (${HEADERS_TIMEOUT_MS / 1000} s)`), 'the header time');
  assert.ok(security.includes(`(${DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS} s by default,`), 'the introspection cache TTL');
});

test('dpop.md: the proof window and the replay cache size', () => {
  const dpop = page('dpop.md');
  assert.ok(dpop.includes(`\`iat\` within ${DPOP_PROOF_WINDOW_SECONDS} s`), 'the proof window');
  assert.ok(dpop.includes(`up to ${spelt(DEFAULT_REPLAY_CACHE_MAX_ENTRIES)} \`jti\`s`), 'the replay cache size');
});
