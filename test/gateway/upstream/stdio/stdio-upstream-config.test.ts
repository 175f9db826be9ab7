/**
 * The stdio upstream's settings, as loadGatewayConfig reads them, and the real CLI stopping its processes on
 * SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from '../../../helpers/child-process.js';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigurationError } from '../../../../src/core/kernel/errors.js';
import { GATEWAY_SETTINGS, gatewayHelp, loadGatewayConfig, parseGatewayArgs } from '../../../../src/gateway/config/gateway-config.js';
import { createStdioUpstream } from '../../../../src/gateway/upstream/stdio/stdio-upstream.js';
import { DEFAULT_UPSTREAM_NAME } from '../../../../src/gateway/upstream/upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { NODE_SERVER, quote, RawSession, ROOT, waitUntilGone } from '../../../helpers/stdio-gateway.js';

const COMMAND = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;
const base = { MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_UPSTREAM_COMMAND: COMMAND };

function settingAtFault(settings: Record<string, string>): { setting: string; message: string } {
  try {
    loadGatewayConfig(settings);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return { setting: error.setting, message: error.message };
  }
  assert.fail('expected a ConfigurationError');
}

describe('stdio upstream settings', () => {
  it('--upstream-command runs a stdio server: the command split, PATH, HOME and LANG only (from the settings, else the gateway\'s environment), the defaults left to the upstream', () => {
    const args = parseGatewayArgs(['--upstream-command', `${quote(process.execPath)} '${NODE_SERVER}' --flag "a b"`, '--identity-env'], { MCP_AUTH_ISSUER: 'https://auth.example.com', PATH: '/usr/bin:/bin', HOME: '/home/x', SECRET: 's' });
    assert.equal(args.help, false);
    if (args.help) return;
    assert.equal(args.settings.MCP_AUTH_IDENTITY_ENV, 'true');
    const config = loadGatewayConfig(args.settings);
    assert.equal(config.proxy, undefined);
    assert.deepEqual(config.stdio, { command: process.execPath, args: [NODE_SERVER, '--flag', 'a b'], env: { PATH: '/usr/bin:/bin', HOME: '/home/x', ...(process.env.LANG ? { LANG: process.env.LANG } : {}) }, identityEnv: true });
  });

  it('reads every bound and passes the named variables', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stdio-cwd-'));
    try {
      const config = loadGatewayConfig({
        ...base,
        PATH: process.env.PATH ?? '',
        MCP_AUTH_UPSTREAM_CWD: dir,
        MCP_AUTH_UPSTREAM_ENV: 'API_KEY, REGION MISSING',
        API_KEY: 'k',
        REGION: 'eu',
        MCP_AUTH_MAX_UPSTREAM_PROCESSES: '10',
        MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER: '2',
        MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS: '60000',
        MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '1000',
        MCP_AUTH_UPSTREAM_MAX_LINE_BYTES: '65536',
        MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '9000',
        MCP_AUTH_IDENTITY_ENV: 'off',
      });
      assert.deepEqual(config.stdio, {
        command: process.execPath,
        args: [NODE_SERVER],
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', API_KEY: 'k', REGION: 'eu', ...(process.env.HOME ? { HOME: process.env.HOME } : {}), ...(process.env.LANG ? { LANG: process.env.LANG } : {}) },
        identityEnv: false,
        maxProcesses: 10,
        maxProcessesPerCaller: 2,
        processIdleTimeoutMs: 60_000,
        stopTimeoutMs: 1000,
        maxLineBytes: 65_536,
        idleTimeoutMs: 9000,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses both upstreams at once, naming both, and neither', () => {
    const both = settingAtFault({ ...base, MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' });
    assert.equal(both.setting, 'MCP_AUTH_UPSTREAM_COMMAND');
    assert.match(both.message, /MCP_AUTH_UPSTREAM_COMMAND: and MCP_AUTH_UPSTREAM are both set/);
    const neither = settingAtFault({ MCP_AUTH_ISSUER: 'https://auth.example.com' });
    assert.equal(neither.setting, 'MCP_AUTH_UPSTREAM');
    assert.match(neither.message, /MCP_AUTH_UPSTREAM_COMMAND/);
  });

  it('names the setting at fault, with the fix', () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ MCP_AUTH_UPSTREAM_COMMAND: 'no-such-program-x1 --stdio' }, 'MCP_AUTH_UPSTREAM_COMMAND', /not on the PATH/],
      [{ MCP_AUTH_UPSTREAM_COMMAND: 'node server.js > out.log' }, 'MCP_AUTH_UPSTREAM_COMMAND', /no shell runs the command/],
      [{ MCP_AUTH_UPSTREAM_COMMAND: "node 'server.js" }, 'MCP_AUTH_UPSTREAM_COMMAND', /unterminated/],
      [{ MCP_AUTH_UPSTREAM_CWD: '/no/such/dir' }, 'MCP_AUTH_UPSTREAM_CWD', /not a directory/],
      [{ MCP_AUTH_UPSTREAM_ENV: 'MCP_AUTH_INTROSPECTION_CLIENT_SECRET' }, 'MCP_AUTH_UPSTREAM_ENV', /gateway's own settings/],
      [{ MCP_AUTH_UPSTREAM_ENV: 'MCP_CALLER_SUBJECT' }, 'MCP_AUTH_UPSTREAM_ENV', /MCP_AUTH_IDENTITY_ENV/],
      [{ MCP_AUTH_UPSTREAM_ENV: 'BAD-NAME' }, 'MCP_AUTH_UPSTREAM_ENV', /not an environment variable name/],
      [{ MCP_AUTH_IDENTITY_ENV: 'maybe' }, 'MCP_AUTH_IDENTITY_ENV', /use on or off/],
      [{ MCP_AUTH_IDENTITY_HEADERS: 'on' }, 'MCP_AUTH_IDENTITY_HEADERS', /MCP_AUTH_IDENTITY_ENV/],
      [{ MCP_AUTH_MAX_UPSTREAM_PROCESSES: '0' }, 'MCP_AUTH_MAX_UPSTREAM_PROCESSES', /./],
      [{ MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER: 'many' }, 'MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER', /./],
      [{ MCP_AUTH_UPSTREAM_MAX_LINE_BYTES: '10' }, 'MCP_AUTH_UPSTREAM_MAX_LINE_BYTES', /./],
    ];
    for (const [settings, setting, message] of cases) {
      const fault = settingAtFault({ ...base, PATH: process.env.PATH ?? '', ...settings });
      assert.equal(fault.setting, setting, JSON.stringify(settings));
      assert.match(fault.message, message);
    }
    // A stdio setting with an HTTP upstream would do nothing: refused.
    const http = settingAtFault({ MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_MAX_UPSTREAM_PROCESSES: '3' });
    assert.equal(http.setting, 'MCP_AUTH_MAX_UPSTREAM_PROCESSES');
    assert.match(http.message, /stdio upstream/);
  });

  it('implements the upstream contract: named (default `default`), transport stdio; a bad name is refused', async () => {
    // Started with nothing: no process runs until a session opens.
    const unnamed = createStdioUpstream({ command: process.execPath });
    const notes = createStdioUpstream({ command: process.execPath, name: 'notes' });
    try {
      assert.deepEqual([unnamed.name, unnamed.transport], [DEFAULT_UPSTREAM_NAME, 'stdio']);
      assert.deepEqual([notes.name, notes.transport], ['notes', 'stdio']);
    } finally {
      await Promise.all([unnamed.close(), notes.close()]);
    }
    for (const name of ['a__b', '1st', '', 'x'.repeat(65)]) {
      assert.throws(() => createStdioUpstream({ command: process.execPath, name }), (error) => error instanceof ConfigurationError && error.setting === 'name', name);
    }
  });

  it('an integer option and its variable accept the same range: each refuses the same values, at both ends', () => {
    const cases: [option: string, env: string, below: number, lowest: number, highest: number][] = [
      ['maxProcesses', 'MCP_AUTH_MAX_UPSTREAM_PROCESSES', 0, 1, 100_000],
      ['stopTimeoutMs', 'MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS', 0, 1, 600_000],
      ['maxLineBytes', 'MCP_AUTH_UPSTREAM_MAX_LINE_BYTES', 1023, 1024, 1_073_741_824],
      ['maxStdinBytes', 'MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES', 1023, 1024, 1_073_741_824],
      ['replayWindowMs', 'MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS', 0, 1, 2_147_483_647],
    ];
    for (const [option, env, below, lowest, highest] of cases) {
      for (const [value, accepted] of [[below, false], [lowest, true], [highest, true], [highest + 1, false]] as const) {
        let library = true;
        try {
          // Started with nothing: no process runs until a session opens.
          void createStdioUpstream({ command: process.execPath, [option]: value }).close();
        } catch (error) {
          assert.ok(error instanceof ConfigurationError);
          library = false;
        }
        let gateway = true;
        try {
          loadGatewayConfig({ ...base, [env]: String(value) });
        } catch (error) {
          assert.ok(error instanceof ConfigurationError);
          gateway = false;
        }
        assert.deepEqual([library, gateway], [accepted, accepted], `${option} / ${env} = ${value}`);
      }
    }
  });

  it('--help lists every stdio setting with its flag and default', () => {
    const help = gatewayHelp();
    const expected: [string, string, string | undefined][] = [
      ['MCP_AUTH_UPSTREAM_COMMAND', '--upstream-command', undefined],
      ['MCP_AUTH_UPSTREAM_CWD', '--upstream-cwd', "the gateway's"],
      ['MCP_AUTH_UPSTREAM_ENV', '--upstream-env', 'none'],
      ['MCP_AUTH_IDENTITY_ENV', '--identity-env', 'off'],
      ['MCP_AUTH_MAX_UPSTREAM_PROCESSES', '--max-upstream-processes', '32'],
      ['MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER', '--max-upstream-processes-per-caller', '4'],
      ['MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS', '--upstream-process-idle-timeout-ms', '600000'],
      ['MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS', '--upstream-stop-timeout-ms', '5000'],
      ['MCP_AUTH_UPSTREAM_MAX_LINE_BYTES', '--upstream-max-line-bytes', '4194304'],
    ];
    for (const [env, flag, defaultValue] of expected) {
      const setting = GATEWAY_SETTINGS.find((s) => s.env === env);
      assert.equal(setting?.flag, flag, env);
      assert.equal(setting?.defaultValue, defaultValue, env);
      assert.ok(help.includes(`${flag} `) && help.includes(`${env}: `), env);
    }
  });
});

describe('the CLI with a stdio upstream', { timeout: 60_000 }, () => {
  let as: AuthorizationServer;
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
  });
  after(async () => {
    await as?.close();
  });

  it('serves sessions from processes and stops every one on SIGTERM before exiting 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'src/gateway/cli.ts'), '--port', '0', '--upstream-command', COMMAND], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', MCP_AUTH_ISSUER: as.issuer },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.resume();
      await new Promise<void>((resolveWait, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line: ${stdout}`)), 20_000);
        const check = (): void => {
          if (!stdout.includes('"event":"listening"')) return;
          clearTimeout(timer);
          resolveWait();
        };
        child.stdout.on('data', check);
        child.once('exit', () => reject(new Error(`exited: ${stdout}`)));
      });
      const started = JSON.parse(stdout.split('\n')[0]!) as { resource: string; upstreamCommand: string; upstream?: string };
      assert.equal(started.upstreamCommand, process.execPath, 'the program, not its arguments');
      assert.equal(started.upstream, undefined);
      as.addResource(started.resource, { scopes: ['mcp:basic'] });
      const pids: number[] = [];
      for (const sub of ['alice', 'bob']) {
        const s = new RawSession(started.resource, await as.issueAccessToken({ resource: started.resource, scope: 'mcp:basic', sub }));
        assert.equal((await s.initialize()).status, 200);
        pids.push((JSON.parse(await s.text('whoami')) as { pid: number }).pid);
      }
      child.kill('SIGTERM');
      const [code] = (await Promise.race([once(child, 'exit'), new Promise((_, reject) => setTimeout(() => reject(new Error('no exit after SIGTERM')), 15_000))])) as [number];
      assert.equal(code, 0);
      for (const pid of pids) assert.ok(await waitUntilGone(pid, 1_000), `process ${pid} outlived the gateway`);
      const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      // One exit per session, and the start-up policy listing's own short-lived process.
      assert.equal(lines.filter((l) => l.event === 'upstream_exit' && l.session !== 'policy-coverage').length, 2);
      assert.equal(lines.filter((l) => l.event === 'upstream_exit' && l.session === 'policy-coverage').length, 1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
