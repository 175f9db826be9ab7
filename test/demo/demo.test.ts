// `npm run demo` end to end, as a new user runs it: exits 0, shows every step, never prints a token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { runScript } from '../helpers/run-cli.js';

const DEMO = fileURLToPath(new URL('../../examples/demo/demo.ts', import.meta.url));

/** Runs `npm run demo` (in CI mode: no browser is opened) to its end; `out` is stdout, then stderr. */
async function runDemo(args: string[]): Promise<{ code: number | null; out: string }> {
  const { code, stdout, stderr } = await runScript(DEMO, args, { env: { ...process.env, CI: 'true' }, timeoutMs: 85_000 });
  return { code, out: stdout + stderr };
}

test('the demo completes by itself, prints each step and only redacted tokens', { timeout: 90_000 }, async () => {
  const { code, out } = await runDemo([]);
  assert.equal(code, 0, out);
  for (const step of ['[probe]', '[resource-metadata]', '[authorization-server]', '[registration]', '[authorization-url]', '[token]', '[step-up]', 'tools:         whoami, notes_list', 'added note #1', 'Done: every step passed']) {
    assert.ok(out.includes(step), `transcript lacks ${step}`);
  }
  assert.match(out, /403 Forbidden/);
  // A JWT is three base64url parts; a redacted one shows six characters and an ellipsis.
  assert.doesNotMatch(out, /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/);
});

test('the demo in --dpop mode: DPoP is required, every token is bound to the client key, the flow completes', { timeout: 90_000 }, async () => {
  const { code, out } = await runDemo(['--dpop']);
  assert.equal(code, 0, out);
  assert.ok(out.includes('MCP_AUTH_DPOP=require'), 'the guard runs in require mode');
  // The bare 401 offers DPoP only; the step-up 403 is told in the DPoP challenge.
  assert.match(out, /"wwwAuthenticate": "DPoP algs=/);
  assert.match(out, /"wwwAuthenticate": "DPoP error=\\"insufficient_scope\\"/);
  assert.match(out, /"tokenType": "dpop"/);
  const bound = /token bound to key \(cnf\.jkt\): ([A-Za-z0-9_-]{43})/.exec(out);
  assert.ok(bound, 'whoami ran with a bound token');
  for (const step of ['added note #1', 'Done: every step passed']) assert.ok(out.includes(step), `transcript lacks ${step}`);
  assert.doesNotMatch(out, /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/);
});

test('--help prints the usage and runs nothing; an unknown flag is refused', { timeout: 30_000 }, async () => {
  const help = await runDemo(['--help']);
  assert.equal(help.code, 0, help.out);
  assert.match(help.out, /^Usage: npm run demo/);
  assert.ok(help.out.includes('--dpop') && !help.out.includes('Authorization server'), 'usage only, no demo run');
  const unknown = await runDemo(['--dop']);
  assert.equal(unknown.code, 2, unknown.out);
  assert.match(unknown.out, /demo: unknown argument --dop/);
});
