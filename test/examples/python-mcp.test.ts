// examples/python-mcp/: its README's commands, run as written (ports free), put the gateway in front of the server
// built on the official Python `mcp` package, over stdio (a real process per session) and over Streamable HTTP.
// The gateway's policy check must find nothing open and no stray rule; a notes:read token sees the read tools
// only and is refused remember with 403 naming notes:write; a notes:write token keeps a note.
// Skipped, saying why, where python3 cannot import mcp.
import assert from 'node:assert/strict';
import { spawnSync } from '../helpers/child-process.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { exampleBlock, readerEnvironment, runnable, RunningShell } from '../helpers/documented-command.js';
import { freePort } from '../helpers/free-port.js';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';
import { RawSession } from '../helpers/stdio-gateway.js';

const FOLDER = join(REPOSITORY_ROOT, 'examples', 'python-mcp');
const README = readFileSync(join(FOLDER, 'README.md'), 'utf8');
const READ_TOOLS = ['add', 'recall', 'whoami'];

/** Why the test cannot run here, or false: python3 must import the official package, 1.23.1 or later (MCP 2025-11-25). */
function skipReason(): string | false {
  const probe = spawnSync('python3', ['-c', 'import mcp.server.fastmcp, importlib.metadata as m; print(m.version("mcp"))'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.error) return `python3 is not installed (${probe.error.message})`;
  if (probe.status !== 0) return 'python3 cannot import the official mcp package (pip install "mcp>=1.23.1,<2" to run this test)';
  const [major = 0, minor = 0, patch = 0] = probe.stdout.trim().split('.').map((part) => Number.parseInt(part, 10));
  if (major !== 1 || minor < 23 || (minor === 23 && patch < 1)) return `python3 has mcp ${probe.stdout.trim()}; the example needs 1.23.1 or later, before 2`;
  return false;
}

const SKIP = skipReason();

interface Variant {
  name: string;
  /** The README blocks to start, in order; the last is the gateway. */
  blocks: string[];
  /** Ports the README names, each replaced by a free one. */
  ports: number[];
}

const VARIANTS: Variant[] = [
  { name: 'stdio', blocks: ['stdio-gateway'], ports: [8080, 9400] },
  { name: 'Streamable HTTP', blocks: ['http-server', 'http-gateway'], ports: [8080, 9400, 3001] },
];

for (const variant of VARIANTS) {
  describe(`examples/python-mcp over ${variant.name}: the README's commands in front of the official SDK's server`, { skip: SKIP, timeout: 120_000 }, () => {
    let as: AuthorizationServer;
    let home: string;
    let resource: string;
    let gateway: RunningShell;
    const running: RunningShell[] = [];

    const session = async (scope: string): Promise<RawSession> => {
      const s = new RawSession(resource, await as.issueAccessToken({ resource, scope, sub: `${scope}-user` }));
      const init = await s.initialize();
      assert.equal(init.status, 200, init.text);
      return s;
    };

    before(async () => {
      home = mkdtempSync(join(tmpdir(), 'python-mcp-'));
      as = await startAuthorizationServer({ baseScopes: [] });
      const ports = new Map<number, number>();
      for (const port of variant.ports) ports.set(port, port === 9400 ? Number(new URL(as.issuer).port) : await freePort());
      resource = `http://127.0.0.1:${ports.get(8080)}/mcp`;
      as.addResource(resource, { scopes: ['notes:read', 'notes:write'] });
      for (const name of variant.blocks) {
        const shell = new RunningShell(runnable(exampleBlock(README, name), ports), readerEnvironment(home));
        running.push(shell);
        if (name === 'http-server') await waitForHttp(`http://127.0.0.1:${ports.get(3001)}/mcp`, shell);
        gateway = shell;
      }
      await gateway.line(/"event":"listening"/);
    });

    after(async () => {
      for (const shell of running.splice(0).reverse()) await shell.stop();
      await as?.close();
      if (home) rmSync(home, { recursive: true, force: true });
    });

    test("the gateway's policy check: every tool, resource and prompt has a rule, none open, no rule matches nothing", async () => {
      const summary = JSON.parse(await gateway.line(/"event":"summary"/)) as Record<string, any>;
      assert.deepEqual(summary.tools, { protected: 4, open: 0 }, gateway.stdout);
      assert.deepEqual(summary.resources, { protected: 1, open: 0 });
      assert.deepEqual(summary.prompts, { protected: 1, open: 0 });
      assert.equal(summary.unmatchedRules, 0, gateway.stderr);
      assert.doesNotMatch(gateway.stderr, /"event":"warning".*policy/);
    });

    test('a notes:read token sees the read tools only, and calls them; remember is refused with 403 naming notes:write', async () => {
      const reader = await session('notes:read');
      const listed = await reader.post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      assert.deepEqual((listed.json.result.tools as { name: string }[]).map((t) => t.name).sort(), READ_TOOLS);
      assert.equal(await reader.text('add', { a: 2, b: 3 }), '5');
      if (variant.name === 'stdio') assert.match(await reader.text('whoami'), /^subject notes:read-user, client mcp-oauth-guard-service, issuer http:\/\/127\.0\.0\.1:\d+$/);

      const refused = await reader.call('remember', { text: 'not allowed' });
      assert.equal(refused.status, 403, refused.text);
      const challenge = String(refused.headers['www-authenticate']);
      assert.match(challenge, /error="insufficient_scope"/);
      assert.ok((/scope="([^"]*)"/.exec(challenge)?.[1] ?? '').split(' ').includes('notes:write'), challenge);
    });

    test('a notes:write token keeps a note and reads it back', async () => {
      const writer = await session('notes:write');
      assert.equal(await writer.text('remember', { text: 'through the gateway' }), '1 note(s)');
      assert.equal(await writer.text('recall'), 'through the gateway');
      const read = await writer.post({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'notes://recent' } });
      assert.equal(read.json?.result?.contents?.[0]?.text, 'through the gateway', read.text);
    });
  });
}

/** Waits until the Python server answers on its MCP endpoint (any HTTP status), failing with its output if it exits. */
async function waitForHttp(url: string, shell: RunningShell): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (await fetch(url, { method: 'GET' }).then(() => true, () => false)) return;
    const { exitCode, signalCode } = shell.child;
    if (exitCode !== null || signalCode !== null) assert.fail(`the Python server exited (${exitCode ?? signalCode}):\n${shell.stdout}${shell.stderr}`);
    if (Date.now() > deadline) assert.fail(`the Python server did not answer within 30 s:\n${shell.stdout}${shell.stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
