// The JWT fast path re-implements part of jose's jwtVerify and names the jose version it follows: an upgrade of
// jose fails here until the fast path has been re-read against it (see the list atop verify-compact-jwt.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

test('the JWT fast path names the jose version installed and pinned', () => {
  const source = readFileSync(new URL('../../../src/core/jwt/verify-compact-jwt.ts', import.meta.url), 'utf8');
  const named = /It follows \*\*jose (\d+\.\d+\.\d+)\*\*/.exec(source)?.[1];
  assert.ok(named, 'verify-compact-jwt.ts names the jose version it follows');
  const installed = (createRequire(import.meta.url)('jose/package.json') as { version: string }).version;
  const pinned = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }).dependencies.jose;
  assert.equal(pinned, installed, 'package.json pins jose exactly');
  assert.equal(named, installed, `jose is ${installed}: re-check the fast path against it (see verify-compact-jwt.ts), then name it there`);
});
