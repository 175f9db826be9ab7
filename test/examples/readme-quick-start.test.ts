// The README's quick starts, run as a new user runs them: their commands exactly as written (only the ports are
// changed, to free ones), each in a shell of its own.
// Gateway: the local authorization server, the example upstream and the gateway (the package's bin, as `npx`
// finds it in the clone, started in a folder holding the README's policy.json) stay up; then the curl lines must
// get a tool's answer and a 403 for the call the scope does not allow, and the SDK client example must sign in
// (authorization code + PKCE), be refused, sign in again for more scope and succeed.
// Middleware: the README's server.ts, in a project that installed the package, answers a token's tool call, and the
// README's client command signs in for the scope its metadata lists and calls the tool.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from '../helpers/child-process.js';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/free-port.js';
import { buildWhenStale, userEnvironment } from '../helpers/installed-package.js';
import { killProcess, runCommand, type CliRun } from '../helpers/run-cli.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const STARTUP_MS = 60_000;

/** The fenced blocks of a README section, by the name in the `<!-- quick-start: name -->` line before each. */
function quickStartBlocks(heading: string, names: readonly string[]): Map<string, string> {
  const section = new RegExp(`^## ${heading}\\n([\\s\\S]*?)^## `, 'm').exec(README)?.[1];
  assert.ok(section, `the README has a "## ${heading}" section`);
  const blocks = new Map<string, string>();
  for (const [, name = '', body = ''] of section.matchAll(/^<!-- quick-start: ([\w.-]+) -->\n```\w*\n([\s\S]*?)^```$/gm)) {
    assert.ok(!blocks.has(name), `one block named ${name}`);
    blocks.set(name, body);
  }
  assert.deepEqual([...blocks.keys()].sort(), [...names].sort(), `"${heading}" marks each of its blocks`);
  return blocks;
}

/** Replaces each port the README uses by the free one the test picked for it. */
function withPorts(command: string, ports: ReadonlyMap<string, number>): string {
  let result = command;
  for (const [readme, free] of ports) result = result.replace(new RegExp(`\\b${readme}\\b`, 'g'), String(free));
  return result;
}

/** A README command running in a shell of its own (its own process group, so that stopping it stops npm's children). */
interface Running {
  child: ChildProcess;
  output: () => string;
}

/** Every command still running, stopped after each quick start. */
const running: Running[] = [];
// Whatever ends this process, a command it started does not outlive it.
process.once('exit', () => {
  for (const { child } of running) stopGroup(child, 'SIGKILL');
});

function startCommand(command: string, cwd: string): Running {
  const child = spawn('sh', ['-c', command], { cwd, env: userEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started = { child, output: () => output };
  running.push(started);
  return started;
}

/** Resolves once the command has printed `ready`; fails with what it printed if it exits or takes too long. */
async function waitFor(command: Running, ready: RegExp, what: string): Promise<void> {
  const deadline = Date.now() + STARTUP_MS;
  while (!ready.test(command.output())) {
    const { exitCode, signalCode } = command.child;
    if (exitCode !== null || signalCode !== null) assert.fail(`${what} exited (${exitCode ?? signalCode}):\n${command.output()}`);
    if (Date.now() > deadline) assert.fail(`${what} did not start within ${STARTUP_MS / 1000} s:\n${command.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs a README command in a shell to its end, bounded in time (its process group killed then); its exit code and output. */
function runShell(command: string, cwd: string, timeoutMs = 60_000): Promise<CliRun> {
  return runCommand('sh', ['-c', command], { cwd, env: userEnvironment(), detached: true, timeoutMs });
}

function stopGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  killProcess(child, signal, true);
}

/** Stops every command started so far (SIGTERM to its process group, SIGKILL after 10 s). */
async function stopAll(): Promise<void> {
  const stopping = running.splice(0);
  for (const { child } of stopping) stopGroup(child, 'SIGTERM');
  await Promise.all(
    stopping.map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const timer = setTimeout(() => stopGroup(child, 'SIGKILL'), 10_000);
      await once(child, 'exit');
      clearTimeout(timer);
    }),
  );
}

/** A free port for each port the README names. */
async function freePorts(...readmePorts: number[]): Promise<Map<string, number>> {
  const ports = new Map<string, number>();
  for (const port of readmePorts) ports.set(String(port), await freePort());
  return ports;
}

describe("the README's gateway quick start, command for command", { timeout: 300_000 }, () => {
  const blocks = quickStartBlocks('Gateway quick start', ['auth-server', 'upstream', 'policy.json', 'gateway', 'curl', 'sdk-client', 'sdk-client-snippet']);
  let folder: string;
  let ports: Map<string, number>;
  let gateway: Running;
  const command = (name: string): string => withPorts(blocks.get(name)!, ports);

  before(async () => {
    buildWhenStale();
    ports = await freePorts(9400, 8080, 3001);
    // "in the folder holding policy.json": a folder of the clone (git ignores node_modules/), the file as written.
    const cache = join(ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    folder = mkdtempSync(join(cache, 'readme-quick-start-'));
    writeFileSync(join(folder, 'policy.json'), blocks.get('policy.json')!);

    const authServer = startCommand(command('auth-server'), ROOT);
    const upstream = startCommand(command('upstream'), ROOT);
    await waitFor(authServer, /Ctrl-C stops it\./, 'npm run auth-server');
    await waitFor(upstream, /upstream MCP server .*: http:\/\/127\.0\.0\.1:\d+\/mcp/, 'the example upstream');
    gateway = startCommand(command('gateway'), folder);
    await waitFor(gateway, /"event":"listening"/, 'the gateway');
  });

  after(async () => {
    await stopAll();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  test('policy.json is a policy the gateway read: its start-up line names it, and no rule matches nothing', async () => {
    assert.match(gateway.output(), /"event":"listening".*"policy":"policy\.json"/);
    // The policy check runs once the upstream has been listed: its summary counts what the policy leaves open.
    await waitFor(gateway, /"event":"summary"/, 'the policy check');
    const summary = JSON.parse(gateway.output().split('\n').find((line) => line.includes('"event":"summary"'))!) as { tools: { protected: number; open: number }; unmatchedRules: number };
    assert.deepEqual(summary.tools, { protected: 2, open: 1 }, 'whoami is open, the counter tools are protected');
    assert.equal(summary.unmatchedRules, 0);
  });

  test("from a folder of one's own, outside the clone, as the README says until the package is published: node <clone>/dist/gateway/cli.js in place of npx reads policy.json there", async () => {
    assert.match(README, /put `node <clone>\/dist\/gateway\/cli\.js` in place of\s+`npx mcp-oauth-guard` in your folder/);
    const own = mkdtempSync(join(tmpdir(), 'readme-own-folder-'));
    try {
      writeFileSync(join(own, 'policy.json'), blocks.get('policy.json')!);
      // `check` with the same flags: it reads the settings as the gateway does, and starts nothing.
      const line = command('gateway').replace('npx mcp-oauth-guard', `node ${JSON.stringify(join(ROOT, 'dist', 'gateway', 'cli.js'))} check`);
      const { code, stdout, stderr } = await runShell(line, own);
      assert.equal(code, 0, `${stdout}${stderr}`);
      assert.match(stdout, /^ok {4}policy policy\.json: read: 4 tool, 0 prompt and 0 resource rules/m);
      assert.match(stdout, /^ok {4}upstream \S+: initialize and the lists answered: 3 tools/m);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  test('curl: the call the token allows is answered, the one it does not is refused with 403', async () => {
    const { code, stdout, stderr } = await runShell(command('curl'), ROOT);
    assert.equal(code, 0, stderr);
    const [answer = '', status = ''] = stdout.trim().split('\n');
    assert.deepEqual(JSON.parse(answer).result.content, [{ type: 'text', text: 'counter: 0' }]);
    assert.equal(status, '403');
  });

  test('the SDK client signs in with PKCE, is refused counter_increment, signs in again for counter:write, and calls it', async () => {
    const { code, stdout, stderr } = await runShell(command('sdk-client'), ROOT);
    assert.equal(code, 0, `${stdout}${stderr}`);
    const lines = stdout.trim().split('\n');
    assert.ok(lines.includes(`signing in for scope "counter:read" at http://127.0.0.1:${ports.get('9400')}`), stdout);
    assert.ok(lines.includes('tools this token may use: whoami, counter_get'), stdout);
    assert.ok(lines.some((line) => /^signing in for scope "(counter:write counter:read|counter:read counter:write)"/.test(line)), stdout);
    assert.ok(lines.includes('counter_increment: counter: 1'), stdout);
  });

  test("the README's SDK client snippet is the example's code, line for line", () => {
    const example = readFileSync(join(ROOT, 'examples', 'sdk-client.ts'), 'utf8').split('\n');
    const snippet = blocks.get('sdk-client-snippet')!.trimEnd().split('\n');
    const start = example.indexOf(snippet[0]!);
    assert.ok(start !== -1, `examples/sdk-client.ts has the snippet's first line:\n${snippet[0]}`);
    assert.deepEqual(example.slice(start, start + snippet.length), snippet);
    // As the SDK expects: one Client; the transport the sign-in failed on finishes it, and a new one connects.
    const code = snippet.join('\n');
    assert.equal(code.match(/new Client\(/g)?.length, 1, code);
    assert.equal(code.match(/new StreamableHTTPClientTransport\(/g)?.length, 2, code);
    assert.ok(code.indexOf('transport.finishAuth(') < code.lastIndexOf('await client.connect('), code);
    assert.doesNotMatch(code, /\bfor \(|\bwhile \(/, 'no retry loop making a client per attempt');
  });
});

describe("the README's middleware quick start, in a project that installed the package", { timeout: 300_000 }, () => {
  const blocks = quickStartBlocks('Middleware quick start', ['middleware', 'middleware-run', 'middleware-client']);
  let project: string;
  let ports: Map<string, number>;
  let resource: string;

  before(async () => {
    buildWhenStale();
    ports = await freePorts(9400, 3000);
    resource = `http://127.0.0.1:${ports.get('3000')}/mcp`;
    // What `npm install mcp-oauth-guard` leaves: the package (this clone) and its peer express; tsx for `npx tsx`.
    project = mkdtempSync(join(tmpdir(), 'readme-middleware-'));
    mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(ROOT, join(project, 'node_modules', 'mcp-oauth-guard'));
    symlinkSync(join(ROOT, 'node_modules', 'express'), join(project, 'node_modules', 'express'));
    symlinkSync(join(ROOT, 'node_modules', '.bin', 'tsx'), join(project, 'node_modules', '.bin', 'tsx'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-mcp-server', private: true, type: 'module' }));
    writeFileSync(join(project, 'server.ts'), withPorts(blocks.get('middleware')!, ports));

    const [authServer, server] = withPorts(blocks.get('middleware-run')!, ports).trim().split('\n');
    const as = startCommand(authServer!, ROOT);
    await waitFor(as, /Ctrl-C stops it\./, 'npm run auth-server');
    const guarded = startCommand(server!, project);
    const deadline = Date.now() + STARTUP_MS;
    // server.ts writes its start-up line only once its handler has been listed, which serving does not wait for:
    // it is up once its metadata document answers.
    for (;;) {
      const metadata = await fetch(`http://127.0.0.1:${ports.get('3000')}/.well-known/oauth-protected-resource/mcp`).catch(() => undefined);
      if (metadata?.ok) break;
      if (guarded.child.exitCode !== null || guarded.child.signalCode !== null) assert.fail(`server.ts exited (${guarded.child.exitCode ?? guarded.child.signalCode}):\n${guarded.output()}`);
      if (Date.now() > deadline) assert.fail(`server.ts did not answer within ${STARTUP_MS / 1000} s:\n${guarded.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  after(async () => {
    await stopAll();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  test('without a token, 401 pointing at the metadata; with one from the local server, hello answers its caller', async () => {
    const call = (headers: Record<string, string>) =>
      fetch(resource, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hello', arguments: {} } }),
      });
    const refused = await call({});
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
    const issuer = `http://127.0.0.1:${ports.get('9400')}`;
    const token = await runShell(`npm run -s token -- --issuer ${issuer} --resource ${resource} --scope hello:use`, ROOT);
    assert.equal(token.code, 0, token.stderr);
    const answer = await call({ authorization: `Bearer ${token.stdout.trim()}` });
    assert.equal(answer.status, 200);
    const body = (await answer.json()) as { result: { content: Array<{ text: string }> } };
    assert.equal(body.result.content[0]!.text, 'hello, mcp-oauth-guard-service');
  });

  test("its metadata lists the policy's scope, and the README's client command signs in for it and calls hello", async () => {
    const metadata = (await (await fetch(`http://127.0.0.1:${ports.get('3000')}/.well-known/oauth-protected-resource/mcp`)).json()) as { scopes_supported: string[] };
    assert.deepEqual(metadata.scopes_supported, ['hello:use']);
    const { code, stdout, stderr } = await runShell(withPorts(blocks.get('middleware-client')!, ports), ROOT);
    assert.equal(code, 0, `${stdout}${stderr}`);
    const lines = stdout.trim().split('\n');
    assert.ok(lines.includes(`signing in for scope "hello:use" at http://127.0.0.1:${ports.get('9400')}`), stdout);
    assert.ok(lines.includes('tools this token may use: hello'), stdout);
    assert.ok(lines.includes('hello: hello, demo'), stdout);
  });
});
