// The README's curl lines for a server that keeps sessions, run as written against the README's stdio gateway
// (the Python example as a real child process) and the local authorization server of step 1 with the scopes the
// README names: initialize, the session id kept, notifications/initialized, a call, a refused call, DELETE.
// Only the ports are changed, to free ones.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exampleBlock, readerEnvironment, runnable, RunningShell } from '../helpers/documented-command.js';
import { freePort } from '../helpers/free-port.js';
import { REPOSITORY_ROOT, runCommand } from '../helpers/run-cli.js';
import { findOnPath } from '../helpers/stdio-gateway.js';

const README = readFileSync(join(REPOSITORY_ROOT, 'README.md'), 'utf8');
const missing = ['python3', 'curl'].filter((program) => findOnPath(program) === undefined);

describe("the README's curl lines for a server that keeps sessions", { skip: missing.length ? `${missing.join(' and ')} not installed (.ci/run installs them)` : false, timeout: 180_000 }, () => {
  let home: string;
  let ports: Map<number, number>;
  const running: RunningShell[] = [];

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'readme-curl-session-'));
    ports = new Map([
      [9400, await freePort()],
      [8080, await freePort()],
    ]);
    // The authorization server line the README gives for the stdio example, as written.
    const line = /\(`(npm run auth-server -- [^`]*--scopes notes:read,notes:write)`\)/.exec(README)?.[1];
    assert.ok(line, "the README gives the stdio example's authorization server line, with its scopes");
    const authServer = new RunningShell(runnable(line, ports), readerEnvironment(home));
    running.push(authServer);
    await authServer.line(/Ctrl-C stops it\./);
    const gateway = new RunningShell(runnable(exampleBlock(README, 'stdio-gateway'), ports), readerEnvironment(home));
    running.push(gateway);
    await gateway.line(/"event":"summary"/);
  });

  after(async () => {
    for (const shell of running.splice(0)) await shell.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test('a session is started, the call answers 5, remember is refused with 403, DELETE answers 200', async () => {
    const { code, stdout, stderr } = await runCommand('sh', ['-c', runnable(exampleBlock(README, 'curl-session'), ports)], { cwd: REPOSITORY_ROOT, env: readerEnvironment(home), detached: true });
    assert.equal(code, 0, stderr);
    const [answer = '', refused = '', deleted = '', ...rest] = stdout.trim().split('\n');
    assert.deepEqual(JSON.parse(answer), { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: '5' }] } });
    assert.equal(refused, '403');
    assert.equal(deleted, '200');
    assert.deepEqual(rest, [], 'notifications/initialized prints nothing');
  });

  test('the README says what the lines print, and why a call without a session fails', () => {
    assert.match(README, /The call answers `5`; `remember` prints `403`, as it needs `notes:write`; DELETE prints `200`\./);
    assert.match(README, /answers a call without one with 400 \(`Mcp-Session-Id header is required`\)/);
  });

  test('without initialize, the same call gets the 400 the README names', async () => {
    // The token and the `mcp` function (the block's first three lines), then the call with no session.
    const block = exampleBlock(README, 'curl-session');
    const prelude = block.split('\n').slice(0, 3).join('\n');
    assert.match(prelude, /^TOKEN=[\s\S]*mcp\(\) \{[\s\S]*"\$@"; \}$/);
    const body = /-d '(\{"jsonrpc":"2\.0","id":2,[^']*)'/.exec(block)?.[1];
    assert.ok(body, 'the block calls a tool with id 2');
    const call = `${prelude}\nmcp -w '\\n' -d '${body}'`;
    const { code, stdout, stderr } = await runCommand('sh', ['-c', runnable(call, ports)], { cwd: REPOSITORY_ROOT, env: readerEnvironment(home), detached: true });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /Mcp-Session-Id header is required/);
  });
});
