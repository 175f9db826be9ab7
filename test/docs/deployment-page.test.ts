// docs/deployment.md names the command for process managers and the gateway's defaults: each must be what the
// package and the code have, and the page must be reachable from the README and the gateway page.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_GATEWAY_PORT, DEFAULT_SHUTDOWN_TIMEOUT_MS } from '../../src/gateway/config/gateway-config.js';
import { DEFAULT_READINESS_CACHE_MS } from '../../src/gateway/server/readiness.js';
import { STDIO_INTEGER_SETTINGS } from '../../src/gateway/upstream/stdio/stdio-integer-settings.js';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';

const read = (path: string): string => readFileSync(join(REPOSITORY_ROOT, path), 'utf8');
const PAGE = read('docs/deployment.md').replace(/\s+/g, ' ');
const PACKAGE = JSON.parse(read('package.json')) as { name: string; bin: Record<string, string> };

test('the command for process managers is node on the bin npm installs, and its link in node_modules/.bin', () => {
  const bin = PACKAGE.bin[PACKAGE.name]!.replace(/^\.\//, '');
  assert.ok(PAGE.includes(`node node_modules/${PACKAGE.name}/${bin}`), `node node_modules/${PACKAGE.name}/${bin}`);
  assert.ok(PAGE.includes(`\`./node_modules/.bin/${PACKAGE.name}\``));
  assert.ok(PAGE.includes(`\`node ${bin}\``), 'and in a clone');
});

test('the defaults it states are the ones the code uses', () => {
  assert.ok(PAGE.includes(`\`PORT\`: ${DEFAULT_GATEWAY_PORT} by default`), 'the port');
  assert.ok(PAGE.includes(`\`MCP_AUTH_SHUTDOWN_TIMEOUT_MS\` (${DEFAULT_SHUTDOWN_TIMEOUT_MS / 1000} s by default)`), 'the shutdown timeout');
  assert.ok(PAGE.includes(`\`MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS\` (${STDIO_INTEGER_SETTINGS.stopTimeoutMs.fallback / 1000} s)`), 'the stop timeout');
  assert.ok(PAGE.includes(`the answer is reused for ${DEFAULT_READINESS_CACHE_MS / 1000} s`), 'the readiness reuse');
});

test('the README and the gateway page link to it', () => {
  assert.match(read('README.md'), /\]\(docs\/deployment\.md\)/);
  assert.match(read('docs/gateway.md'), /\]\(deployment\.md\)/);
});
