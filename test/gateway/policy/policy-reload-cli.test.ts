// Policy reloads of the gateway command, a real child process: SIGHUP reloads the policy file (and a replaced file
// is left alone while the watch is off), an invalid file keeps the policy in force with the reason a start-up
// with that file prints, and --policy-watch picks up a file replaced by rename. Real authorization server,
// real upstream, real files in a temporary directory, real signals.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from '../../helpers/child-process.js';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startUpstreamServer } from '../../../examples/gateway/upstream-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { postMcp } from '../../helpers/http-client.js';
import { REPOSITORY_ROOT, runGatewayCli } from '../../helpers/run-cli.js';

const CLI = resolve(REPOSITORY_ROOT, 'src/gateway/cli.ts');
const SCOPES = ['counter:read', 'counter:write', 'counter:admin'];
const V1 = { tools: { whoami: [], counter_get: ['counter:read'], counter_increment: ['counter:admin'] } };
const V2 = { tools: { whoami: [], counter_get: ['counter:read'], counter_increment: ['counter:write'] } };

let as: AuthorizationServer;
let upstream: { url: string; server: Server };
let dir: string;
const children: ChildProcess[] = [];

/** A running gateway process and everything it wrote so far, one parsed JSON line per entry. */
interface Gateway {
  child: ChildProcess;
  out: Record<string, any>[];
  err: Record<string, any>[];
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  resource: string;
  token: string;
}

function collect(stream: NodeJS.ReadableStream, into: Record<string, any>[]): void {
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    rest += chunk.toString('utf8');
    const parts = rest.split('\n');
    rest = parts.pop()!;
    for (const line of parts) if (line.startsWith('{')) into.push(JSON.parse(line) as Record<string, any>);
  });
}

/** Waits (bounded) for an entry after `skip` that `found` picks. */
async function waitFor(from: Record<string, any>[], found: (line: Record<string, any>) => boolean, what: string, skip = 0): Promise<Record<string, any>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const hit = from.slice(skip).find(found);
    if (hit) return hit;
    if (Date.now() > deadline) throw new Error(`no ${what} within 20 s; got: ${JSON.stringify(from)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function startCli(args: string[]): Promise<Gateway> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--port', '0', '--upstream', upstream.url, ...args], {
    cwd: REPOSITORY_ROOT,
    env: { PATH: process.env.PATH ?? '', MCP_AUTH_ISSUER: as.issuer },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out: Record<string, any>[] = [];
  const err: Record<string, any>[] = [];
  collect(child.stdout!, out);
  collect(child.stderr!, err);
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  // The start-up summary: the gateway is serving and has listed the upstream.
  await waitFor(out, (l) => l.event === 'summary', 'start-up summary');
  const resource = out.find((l) => l.event === 'listening')!.resource as string;
  as.addResource(resource, { scopes: SCOPES });
  const token = await as.issueAccessToken({ resource, scope: 'counter:read counter:write', sub: 'alice' });
  return { child, out, err, exited, resource, token };
}

/** The tools listed, by name; this upstream's JSON answers are reused by the gateway's filtered-list memo. */
const listed = async (gateway: Gateway): Promise<string[]> => {
  const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, gateway.token, { 'mcp-protocol-version': '2025-11-25' });
  assert.equal(answer.status, 200, answer.text);
  return (answer.json.result.tools as { name: string }[]).map((t) => t.name).sort();
};

const increment = (gateway: Gateway) =>
  postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'counter_increment', arguments: {} } }, gateway.token, { 'mcp-protocol-version': '2025-11-25' });

/** Replaces `file` as editors save: a new file renamed over it. */
function replaceFile(file: string, content: string): void {
  const next = `${file}.new`;
  writeFileSync(next, content);
  renameSync(next, file);
}

async function stop(gateway: Gateway): Promise<number | null> {
  gateway.child.kill('SIGTERM');
  const [code] = await gateway.exited;
  return code;
}

describe('gateway command: policy reloads', () => {
  before(async () => {
    as = await startAuthorizationServer();
    upstream = await startUpstreamServer('127.0.0.1', 0);
    dir = mkdtempSync(join(tmpdir(), 'policy-reload-cli-'));
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('watch off: a replaced file is left alone; SIGHUP reloads it and logs the summary again; an invalid file keeps the policy with the start-up reason', { timeout: 90_000 }, async () => {
    const file = join(dir, 'sighup.json');
    writeFileSync(file, JSON.stringify(V1));
    const gateway = await startCli(['--policy', file]);
    assert.equal((await increment(gateway)).status, 403);
    // Twice: the second answer is the memo's, which must not outlive the policy it was filtered under.
    assert.deepEqual(await listed(gateway), ['counter_get', 'whoami']);
    assert.deepEqual(await listed(gateway), ['counter_get', 'whoami']);

    replaceFile(file, JSON.stringify(V2));
    // Five times the watch's quiet period: a watch, were there one, would have reloaded by now.
    await new Promise((r) => setTimeout(r, 1_000));
    assert.ok(!gateway.out.some((l) => l.event === 'policy_reloaded'), 'no reload without the watch');
    assert.equal((await increment(gateway)).status, 403, 'the policy in force is still the first');

    let mark = gateway.out.length;
    gateway.child.kill('SIGHUP');
    const reloaded = await waitFor(gateway.out, (l) => l.event === 'policy_reloaded', 'policy_reloaded line', mark);
    assert.equal(reloaded.trigger, 'SIGHUP');
    assert.equal(reloaded.policy, file);
    assert.deepEqual(reloaded.rules.tools, 3);
    const summary = await waitFor(gateway.out, (l) => l.event === 'summary', 'summary after SIGHUP', mark);
    assert.deepEqual(summary.tools, { protected: 2, open: 1 });
    const answer = await increment(gateway);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(await listed(gateway), ['counter_get', 'counter_increment', 'whoami']);

    const invalid = '{"tools": {"counter_increment": ["counter:admin"]}';
    replaceFile(file, invalid);
    mark = gateway.err.length;
    gateway.child.kill('SIGHUP');
    const refused = await waitFor(gateway.err, (l) => l.message?.startsWith('policy not reloaded'), 'refused reload warning', mark);
    assert.equal(refused.trigger, 'SIGHUP');
    assert.equal((await increment(gateway)).status, 200, 'the policy in force is kept');
    assert.equal(await stop(gateway), 0);

    // The same file at start-up: the same reason, after "configuration error: ".
    const startup = await runGatewayCli(['--port', '0', '--upstream', upstream.url, '--policy', file], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(startup.code, 2);
    assert.equal(startup.stderr.trim().split('\n').at(-1), `mcp-oauth-guard: configuration error: ${refused.detail}`);
  });

  it('--policy-watch: a file replaced by rename is reloaded without a signal; the gateway still stops on SIGTERM', { timeout: 60_000 }, async () => {
    const file = join(dir, 'watched.json');
    writeFileSync(file, JSON.stringify(V1));
    const gateway = await startCli(['--policy', file, '--policy-watch']);
    assert.equal((await increment(gateway)).status, 403);
    const mark = gateway.out.length;
    replaceFile(file, JSON.stringify(V2));
    const reloaded = await waitFor(gateway.out, (l) => l.event === 'policy_reloaded', 'policy_reloaded line', mark);
    assert.equal(reloaded.trigger, 'watch');
    await waitFor(gateway.out, (l) => l.event === 'summary', 'summary after the reload', mark);
    assert.equal((await increment(gateway)).status, 200);
    assert.equal(await stop(gateway), 0);
  });

  it('SIGHUP without a policy file says there is nothing to reload and keeps serving', { timeout: 60_000 }, async () => {
    const gateway = await startCli([]);
    const mark = gateway.err.length;
    gateway.child.kill('SIGHUP');
    const warning = await waitFor(gateway.err, (l) => l.trigger === 'SIGHUP', 'warning', mark);
    assert.match(warning.message, /no policy file is configured \(MCP_AUTH_POLICY\)/);
    assert.equal((await increment(gateway)).status, 200);
    assert.equal(await stop(gateway), 0);
  });

  it('a SIGHUP that comes while the gateway starts does not end it: the reload is done once it serves', { timeout: 60_000 }, async () => {
    const file = join(dir, 'early.json');
    writeFileSync(file, JSON.stringify(V1));
    // Start-up reads the secret from a FIFO, so it waits there, at a known point, until the test writes it.
    const fifo = join(dir, 'secret.fifo');
    const made = spawnSync('mkfifo', [fifo]);
    assert.equal(made.status, 0, String(made.stderr));
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--port', '0', '--upstream', upstream.url, '--policy', file, '--session-secret-file', fifo], {
      cwd: REPOSITORY_ROOT,
      env: { PATH: process.env.PATH ?? '', MCP_AUTH_ISSUER: as.issuer },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const out: Record<string, any>[] = [];
    collect(child.stdout!, out);
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    // Opening the FIFO for writing completes once the gateway has opened it to read: it is starting.
    const writer = await open(fifo, 'w');
    child.kill('SIGHUP');
    await writer.writeFile(randomBytes(32).toString('base64'));
    await writer.close();
    const ended = exited.then(([code, signal]) => ({ code, signal }));
    const listening = waitFor(out, (l) => l.event === 'listening', 'listening line');
    const first: Record<string, unknown> = await Promise.race([listening, ended]);
    assert.equal(first.event, 'listening', `the gateway ended: ${JSON.stringify(first)}`);
    const reloaded = await waitFor(out, (l) => l.event === 'policy_reloaded', 'the reload asked for while starting');
    assert.equal(reloaded.trigger, 'SIGHUP');
    child.kill('SIGTERM');
    assert.deepEqual(await ended, { code: 0, signal: null });
  });
});
