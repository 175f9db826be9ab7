// `npx mcp-oauth-guard` in a project that installed the package, as its README runs it. npm runs the bin through a
// shell (npm exec → sh -c → node) and passes SIGTERM and SIGINT on to that shell only. A shell that does not replace
// itself with its one command (dash, /bin/sh on Debian and Ubuntu) dies of a SIGTERM without passing it on; the
// gateway must still end, with its stdio upstream's processes, and free the port within a bounded time. A Ctrl-C
// (SIGINT to the whole process group, as a terminal sends it) must still be a graceful shutdown of the gateway.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from '../../helpers/child-process.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { acceptsConnections, freePort } from '../../helpers/free-port.js';
import { installPackedPackage, projectEnvironment } from '../../helpers/installed-package.js';
import { NODE_SERVER, quote, RawSession } from '../../helpers/stdio-gateway.js';

/** Time the gateway is given, after the signal, to have freed its port and ended every process. */
const STOP_WITHIN_MS = 20_000;
const SCOPE = 'mcp:basic';

/** Whether a process runs: a zombie (exited, not yet reaped by whoever adopted it) does not. */
function isRunning(pid: number): boolean {
  try {
    return !execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim().startsWith('Z');
  } catch {
    return false; // ps exits 1 when there is no such process
  }
}

/** The parent of a process, from ps. */
function parentOf(pid: number): number {
  return Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
}

/** The pids a test started or found, killed after it should one still run (a failed test leaves them). */
const leftovers = new Set<number>();
function killLeftovers(): void {
  for (const pid of leftovers) {
    try {
      if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  leftovers.clear();
}
process.once('exit', killLeftovers);

describe('npx mcp-oauth-guard in a project that installed the package, stopped with a signal to npx', { timeout: 300_000, skip: process.platform === 'win32' ? 'POSIX signals and ps' : false }, () => {
  let project: string;
  let as: AuthorizationServer;

  before(async () => {
    project = mkdtempSync(join(tmpdir(), 'mcp-oauth-guard-npx-'));
    installPackedPackage(project);
    as = await startAuthorizationServer({ extraScopes: [SCOPE] });
  });

  after(async () => {
    killLeftovers();
    await as?.close();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  const cases = [
    { name: 'SIGTERM to npx alone (what a process manager sends the process it started)', signal: 'SIGTERM', group: false, shutdown: /"event":"shutdown","reason":"parent_exited","parentPid":\d+/ },
    { name: "Ctrl-C (SIGINT to npx's process group)", signal: 'SIGINT', group: true, shutdown: /"event":"shutdown","signal":"SIGINT"/ },
  ] as const;
  for (const { name, signal, group, shutdown } of cases) {
    test(`${name} ends the gateway and its stdio upstream's process, and frees the port`, async () => {
      const port = await freePort();
      const resource = `http://127.0.0.1:${port}/mcp`;
      as.addResource(resource, { scopes: [SCOPE] });
      const env = { ...projectEnvironment(project), PORT: String(port), MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}` };
      // A process group of its own: a signal to npx alone reaches what npx started only through npx.
      const npx: ChildProcess = spawn('npx', ['mcp-oauth-guard'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      leftovers.add(npx.pid!);
      let output = '';
      npx.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      npx.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<void>((resolve) => npx.once('exit', () => resolve()));
      try {
        await until(() => output.includes('"event":"listening"'), 60_000, () => `the gateway did not start:\n${output}`);

        // A session: the gateway starts a process of the upstream's program for it.
        const session = new RawSession(resource, await as.issueAccessToken({ resource, scope: SCOPE }));
        assert.equal((await session.initialize()).status, 200, output);
        const started = output.split('\n').filter((line) => line.includes('"event":"upstream_started"')).map((line) => JSON.parse(line) as { session: string; pid: number });
        const upstreamPid = started.find((event) => event.session !== 'policy-coverage')?.pid;
        assert.ok(upstreamPid && isRunning(upstreamPid), `the session's upstream process runs:\n${output}`);
        leftovers.add(upstreamPid);
        const gatewayPid = parentOf(upstreamPid);
        leftovers.add(gatewayPid);
        assert.notEqual(gatewayPid, npx.pid, 'npx runs the gateway as a process of its own');

        process.kill(group ? -npx.pid! : npx.pid!, signal);
        const ended = await until(async () => !isRunning(gatewayPid) && !isRunning(upstreamPid) && !(await acceptsConnections(port)), STOP_WITHIN_MS);
        assert.ok(ended, `within ${STOP_WITHIN_MS / 1000} s of ${signal} to npx: gateway running ${isRunning(gatewayPid)}, upstream process running ${isRunning(upstreamPid)}, port ${port} taken ${await acceptsConnections(port)}\n${output}`);
        await exited;
        assert.match(output, shutdown, 'the gateway shut down gracefully, and said why');
        assert.equal(output.match(/"event":"shutdown"/g)?.length, 1, 'one shutdown: what follows the first changes nothing');
        assert.match(output, new RegExp(`"event":"upstream_exit"[^\\n]*"pid":${upstreamPid}`), 'it stopped the upstream process itself');
      } finally {
        // npx's group holds npm, its shell and the gateway; the upstream's processes have groups of their own.
        killProcessGroup(npx);
        killLeftovers();
        await exited;
      }
    });
  }
});

/** Polls `condition` every 100 ms for up to `ms`: whether it held; fails with `failure()` instead when given. */
async function until(condition: () => boolean | Promise<boolean>, ms: number, failure?: () => string): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      if (failure) assert.fail(failure());
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

function killProcessGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}
