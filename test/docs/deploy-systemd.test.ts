// The systemd unit example (docs/deploy/mcp-oauth-guard.service): systemd itself accepts it (`systemd-analyze
// verify`, where installed), it runs the gateway's own command from an installed package, its variables are
// settings, and it stops the gateway the way the gateway stops gracefully.
import assert from 'node:assert/strict';
import { spawnSync } from '../helpers/child-process.js';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from '../../src/gateway/config/gateway-config.js';
import { STDIO_INTEGER_SETTINGS } from '../../src/gateway/upstream/stdio/stdio-integer-settings.js';
import { SETTING_VARIABLES } from '../helpers/deployment-gateway.js';
import { REPOSITORY_ROOT, runGatewayCli } from '../helpers/run-cli.js';

const UNIT_FILE = join(REPOSITORY_ROOT, 'docs', 'deploy', 'mcp-oauth-guard.service');
const UNIT = readFileSync(UNIT_FILE, 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'package.json'), 'utf8')) as { name: string; bin: Record<string, string> };

/** The values of a key in the unit (every line `Key=value`, comments left out), in order. */
function values(key: string): string[] {
  return [...UNIT.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((match) => match[1]!.trim());
}
function value(key: string): string {
  const found = values(key);
  assert.equal(found.length, 1, `one ${key}= line`);
  return found[0]!;
}

/** The path of systemd-analyze, or undefined where it is not installed. */
function systemdAnalyze(): string | undefined {
  for (const path of ['/usr/bin/systemd-analyze', '/bin/systemd-analyze']) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}
const SYSTEMD_ANALYZE = systemdAnalyze();

/** Seconds in a systemd time span as the unit writes it (`30`, `30s`, `1min`). */
function seconds(span: string): number {
  const match = /^(\d+)\s*(s|sec|min)?$/.exec(span);
  assert.ok(match, `a time span in seconds or minutes: ${span}`);
  return Number(match[1]) * (match[2] === 'min' ? 60 : 1);
}

describe('the systemd unit example, docs/deploy/mcp-oauth-guard.service', () => {
  test('systemd-analyze verify accepts it, with no warning about it', { skip: SYSTEMD_ANALYZE ? false : 'systemd-analyze is not installed (no systemd here)' }, (t) => {
    // verify checks that ExecStart's program is executable here. The unit names /usr/bin/node; on a machine whose
    // node is elsewhere the copy verified names this node instead, and says so. The script it runs is
    // not checked by systemd (the package is not installed in /opt here); the next test checks that path.
    const [program] = value('ExecStart').split(/\s+/);
    let unit = UNIT;
    try {
      accessSync(program!, constants.X_OK);
    } catch {
      t.diagnostic(`${program} is not here: verified with ExecStart's program replaced by ${process.execPath}`);
      unit = unit.replace(`ExecStart=${program}`, `ExecStart=${process.execPath}`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'systemd-unit-'));
    try {
      const copy = join(dir, 'mcp-oauth-guard.service');
      writeFileSync(copy, unit);
      const verify = spawnSync(SYSTEMD_ANALYZE!, ['verify', '--man=no', copy], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(verify.status, 0, `systemd-analyze verify failed:\n${verify.stdout}${verify.stderr}`);
      // Unknown keys and bad values are warnings only, with the exit status 0: none may name the unit.
      const aboutUnit = `${verify.stdout}${verify.stderr}`.split('\n').filter((line) => line.includes('mcp-oauth-guard.service'));
      assert.deepEqual(aboutUnit, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("ExecStart runs node on the package's bin, as npm installs it: the gateway itself, no npx", () => {
    const [program, script, ...rest] = value('ExecStart').split(/\s+/);
    assert.match(program!, /\/node$/);
    assert.deepEqual(rest, []);
    const bin = PACKAGE.bin[PACKAGE.name]!.replace(/^\.\//, '');
    assert.equal(script, `${value('WorkingDirectory')}/node_modules/${PACKAGE.name}/${bin}`);
    // The bin is what `npm run build` makes of src/gateway/cli.ts.
    assert.equal(bin, 'dist/gateway/cli.js');
    accessSync(join(REPOSITORY_ROOT, 'src', 'gateway', 'cli.ts'));
    assert.doesNotMatch(UNIT, /^ExecStart=.*\bnpx\b/m);
  });

  test('it runs as a user that is not root, with settings and secrets from an EnvironmentFile', () => {
    assert.ok(value('DynamicUser') === 'yes' || !['', 'root', '0'].includes(values('User')[0] ?? ''), 'DynamicUser=yes or a User= that is not root');
    assert.match(value('EnvironmentFile'), /^\//);
    const variables = values('Environment').map((assignment) => assignment.split('=')[0]!);
    assert.deepEqual(variables.filter((name) => name !== 'NODE_ENV' && !SETTING_VARIABLES.has(name)), [], 'Environment= names settings only');
    assert.equal(value('NoNewPrivileges'), 'yes');
    assert.equal(value('CapabilityBoundingSet'), '');
  });

  test("it stops the gateway as the gateway stops: SIGTERM to it alone, time for its shutdown and its processes' stop", () => {
    assert.equal(value('KillMode'), 'mixed', 'SIGTERM to the gateway, which stops its stdio processes itself');
    assert.equal(value('KillSignal'), 'SIGTERM');
    const needed = (DEFAULT_SHUTDOWN_TIMEOUT_MS + STDIO_INTEGER_SETTINGS.stopTimeoutMs.fallback) / 1000;
    assert.ok(seconds(value('TimeoutStopSec')) > needed, `TimeoutStopSec ${value('TimeoutStopSec')} > ${needed} s`);
    assert.equal(value('ExecReload'), '/bin/kill -HUP $MAINPID', 'a reload is the SIGHUP that reloads the policy');
  });

  test('it restarts after a failure, but not after a configuration error, which a restart cannot fix', async () => {
    assert.equal(value('Restart'), 'on-failure');
    // The exit code the gateway command gives a configuration error: a setting that is not one.
    const refused = await runGatewayCli([], { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'https://auth.example.com', PORT: 'eighty' });
    assert.match(refused.stderr, /configuration error: PORT/);
    assert.equal(value('RestartPreventExitStatus'), String(refused.code));
  });
});
