// The configuration file through the real command: a bad file stops the gateway with one message listing every
// problem (exit 2); `check` reads the same file, says the same of a bad one, and checks each server of a good one at
// once, against a real authorization server (oidc-provider on 127.0.0.1), a real HTTP upstream, a real stdio server
// and one that is down; the start-up line names where each setting came from.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startUpstreamServer } from '../../../examples/gateway/upstream-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { runCheckCommand } from '../../../src/gateway/cli/check/check-command.js';
import { describeConfigFile } from '../../../src/gateway/config/config-file-summary.js';
import { spawn, type ChildProcess } from '../../helpers/child-process.js';
import { freePort } from '../../helpers/free-port.js';
import { REPOSITORY_ROOT, runGatewayCli, type CliRun } from '../../helpers/run-cli.js';
import { NODE_SERVER } from '../../helpers/stdio-gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'config-file-cli-'));
let as: AuthorizationServer;
let upstream: { url: string; server: Server };
let closedPort: number;
const children: ChildProcess[] = [];

/** Writes `value` as JSON to `name` in the test's directory and returns its path. */
function writeConfig(name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return file;
}

/** Runs `check …` in this process with `env` as its whole environment (and PATH), PORT a free port. */
async function runCheck(args: string[], env: Record<string, string>): Promise<CliRun> {
  const run = { code: null as number | null, stdout: '', stderr: '' };
  const output = { stdout: (text: string) => void (run.stdout += text), stderr: (text: string) => void (run.stderr += text) };
  run.code = await runCheckCommand(args, { PATH: process.env.PATH ?? '', PORT: String(await freePort()), ...env }, output);
  return run;
}

const BAD_FILE = {
  gateway: { issuer: 'https://auth.example.com', prot: 8080 },
  servers: {
    notes: { url: 'https://notes.example.com/mcp', auth: { mode: 'client_credentials', clientId: 'gw', clientSecret: 'inline' } },
    Notes: { url: 'http://127.0.0.1:3001/mcp' },
    py: { command: ['no-such-program-anywhere', 'server.py'] },
  },
};

describe('the configuration file through the command', () => {
  before(async () => {
    as = await startAuthorizationServer();
    upstream = await startUpstreamServer('127.0.0.1', 0);
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    closedPort = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, 'close');
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a bad file: the gateway exits 2 with one message naming every problem by its JSON path, and --config with MCP_AUTH_UPSTREAM', async () => {
    const file = writeConfig('bad.json', BAD_FILE);
    const run = await runGatewayCli(['--config', file], { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' });
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      [
        'mcp-oauth-guard: configuration error: 5 settings need fixing:',
        '  gateway.prot: is not a gateway setting; did you mean port?',
        '  MCP_AUTH_UPSTREAM (--upstream): and MCP_AUTH_CONFIG are both set: naming both is an error; move this upstream into the file as a server (servers.<name>.url), or unset MCP_AUTH_CONFIG',
        '  servers.notes.auth.clientSecret: is a secret written in the file: secrets are never inline; use clientSecretEnv or clientSecretFile (an environment variable, or a file, holding it)',
        '  servers.Notes: and servers.notes differ only in case: names are compared ignoring case (tool prefixes, metric labels); rename one',
        '  servers.py.command[0]: runs "no-such-program-anywhere", which is not on the PATH the upstream process gets; install it, or give its full path',
        '',
      ].join('\n'),
    );
  });

  it('a file that is not there, named by MCP_AUTH_CONFIG: exit 2 naming the variable and its flag', async () => {
    const missing = join(dir, 'missing.yaml');
    const run = await runGatewayCli([], { MCP_AUTH_CONFIG: missing, MCP_AUTH_ISSUER: 'https://auth.example.com' });
    assert.equal(run.code, 2);
    assert.equal(run.stderr, `mcp-oauth-guard: configuration error: MCP_AUTH_CONFIG (--config): the configuration file ${missing} does not exist; set MCP_AUTH_CONFIG (--config) to a JSON or YAML file\n`);
  });

  it('check with a bad file: the same message, exit 2', async () => {
    const file = writeConfig('bad-check.json', BAD_FILE);
    const run = await runCheck(['--config', file], {});
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^mcp-oauth-guard check: configuration error: 4 settings need fixing:\n {2}gateway\.prot: is not a gateway setting; did you mean port\?\n {2}servers\.notes\.auth\.clientSecret: /);
  });

  it('check with a good file: the file line, one upstream line per server (named, checked at once), each server policy against its own listing; a server that is down fails', async () => {
    const file = writeConfig('good.yaml', [
      'gateway:',
      `  issuer: ${as.issuer}`,
      'servers:',
      '  everything:',
      `    url: ${upstream.url}`,
      '    policy: { tools: { echo: [counter:read], ghost: [x] } }',
      '  py:',
      `    command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(NODE_SERVER)}]`,
      '  down:',
      `    url: http://127.0.0.1:${closedPort}/mcp`,
      '',
    ].join('\n'));
    const run = await runCheck(['--config', file, '--json'], { MCP_AUTH_HTTP_TIMEOUT_MS: '3000' });
    const report = JSON.parse(run.stdout) as { exitCode: number; results: { check: string; status: string; subject?: string; message: string; details?: string[] }[] };
    assert.equal(run.code, 1, run.stdout + run.stderr);
    assert.equal(report.exitCode, 1);
    const config = report.results.find((result) => result.check === 'config');
    assert.deepEqual(config, { check: 'config', subject: file, status: 'ok', message: 'read: 3 servers (everything (http), py (stdio), down (http))', details: ['settings from the file (variables and flags win): MCP_AUTH_ISSUER'] });
    const upstreams = report.results.filter((result) => result.check === 'upstream');
    assert.deepEqual(upstreams.map((result) => [result.subject, result.status]), [
      [`everything: ${upstream.url}`, 'ok'],
      [`py: ${process.execPath}`, 'ok'],
      [`down: http://127.0.0.1:${closedPort}/mcp`, 'fail'],
    ]);
    assert.match(upstreams[0]!.message, /^initialize and the lists answered: 3 tools/);
    const policies = report.results.filter((result) => result.check === 'policy');
    assert.equal(policies[0]!.subject, 'everything: servers.everything.policy');
    assert.ok(policies.some((result) => result.status === 'warn' && result.subject === 'everything' && result.message.includes('"ghost"')), JSON.stringify(policies));
    assert.equal(policies.at(-1)!.message, "no gateway-wide policy (MCP_AUTH_POLICY, gateway.policy): each server's own policy applies to its tools, prompts and resources");
  });

  it('the start-up line names where each setting came from (names only), and no file or servers without one', async () => {
    assert.deepEqual(describeConfigFile({ configFile: '/etc/mcp/gateway.yaml', servers: [{ name: 'a', transport: 'http', required: false }], settingSources: { PORT: 'flag' } }), { config: '/etc/mcp/gateway.yaml', servers: [{ name: 'a', transport: 'http' }], sources: { PORT: 'flag' } });
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/gateway/cli.ts', '--port', String(port), '--upstream', upstream.url], {
      cwd: REPOSITORY_ROOT,
      env: { PATH: process.env.PATH ?? '', MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_UPSTREAM_TOKEN: 'a-secret-value', MCP_AUTH_UPSTREAM_AUTH: 'static' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    await new Promise<void>((resolveWait) => {
      child.stdout!.on('data', (c: Buffer) => {
        stdout += c.toString();
        if (stdout.includes('\n')) resolveWait();
      });
      child.once('exit', () => resolveWait());
    });
    child.kill('SIGTERM');
    const line = JSON.parse(stdout.split('\n')[0]!) as Record<string, unknown>;
    assert.equal(line.event, 'listening', stdout + stderr);
    assert.equal(line.config, undefined);
    assert.equal(line.servers, undefined);
    assert.deepEqual(line.sources, { MCP_AUTH_UPSTREAM: 'flag', MCP_AUTH_ISSUER: 'environment', PORT: 'flag', MCP_AUTH_UPSTREAM_AUTH: 'environment', MCP_AUTH_UPSTREAM_TOKEN: 'environment' });
    assert.ok(!stdout.includes('a-secret-value'), 'never a value');
  });
});
