// The policies of examples/third-party/, each against the real package: its README's gateway command, run as
// written (ports free, HOME a folder of the test's), puts the gateway in front of the real stdio server. The
// gateway's own policy check must find every listed tool covered and no rule matching nothing; a read token
// must see the read tools only and be refused a write with 403 naming the write scope; a write token writes.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { exampleBlock, readerEnvironment, runnable, RunningShell } from '../helpers/documented-command.js';
import { freePort } from '../helpers/free-port.js';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';
import { RawSession } from '../helpers/stdio-gateway.js';

interface PolicyFile {
  tools: Record<string, string[]>;
  resources?: Record<string, string[]>;
}

interface Summary {
  tools: { protected: number; open: number };
  resources?: { protected: number; open: number };
  unmatchedRules: number;
}

/** What each server's test does beyond the common checks. */
interface ServerCase {
  folder: string;
  read: string;
  write: string;
  /** A call a read token may make, and what its text must hold. */
  readCall: (home: string) => { tool: string; args: Record<string, unknown>; answer: RegExp };
  /** A write call, and how to see on disk that the write token's call happened. */
  writeCall: (home: string) => { tool: string; args: Record<string, unknown>; written: () => boolean };
}

const CASES: ServerCase[] = [
  {
    folder: 'filesystem',
    read: 'files:read',
    write: 'files:write',
    readCall: (home) => ({ tool: 'read_text_file', args: { path: join(home, 'mcp-files', 'hello.txt') }, answer: /^hello from the test$/ }),
    writeCall: (home) => {
      const path = join(home, 'mcp-files', 'written.txt');
      return { tool: 'write_file', args: { path, content: 'written through the gateway' }, written: () => existsSync(path) && readFileSync(path, 'utf8') === 'written through the gateway' };
    },
  },
  {
    folder: 'memory',
    read: 'memory:read',
    write: 'memory:write',
    readCall: () => ({ tool: 'read_graph', args: {}, answer: /"entities"/ }),
    writeCall: (home) => {
      const path = join(home, 'mcp-memory.jsonl');
      return {
        tool: 'create_entities',
        args: { entities: [{ name: 'gateway', entityType: 'program', observations: ['written through the gateway'] }] },
        written: () => existsSync(path) && readFileSync(path, 'utf8').includes('"name":"gateway"'),
      };
    },
  },
];

/** The names a policy section gives a rule of their own (not `*`), each with the scopes it needs. */
function namedRules(section: Record<string, string[]> | undefined): Map<string, string[]> {
  return new Map(Object.entries(section ?? {}).filter(([name]) => name !== '*'));
}

for (const server of CASES) {
  describe(`examples/third-party/${server.folder}: its README's command in front of the real server`, { timeout: 120_000 }, () => {
    const folder = join(REPOSITORY_ROOT, 'examples', 'third-party', server.folder);
    const policy = JSON.parse(readFileSync(join(folder, 'policy.json'), 'utf8')) as PolicyFile;
    let as: AuthorizationServer;
    let home: string;
    let gateway: RunningShell;
    let resource: string;

    const session = async (scope: string): Promise<RawSession> => {
      const s = new RawSession(resource, await as.issueAccessToken({ resource, scope, sub: `${scope}-user` }));
      const init = await s.initialize();
      assert.equal(init.status, 200, init.text);
      return s;
    };
    const toolNames = async (s: RawSession): Promise<string[]> => {
      const listed = await s.post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      assert.equal(listed.status, 200, listed.text);
      return (listed.json.result.tools as { name: string }[]).map((t) => t.name).sort();
    };

    before(async () => {
      home = mkdtempSync(join(tmpdir(), `third-party-${server.folder}-`));
      as = await startAuthorizationServer({ baseScopes: [] });
      const port = await freePort();
      resource = `http://127.0.0.1:${port}/mcp`;
      as.addResource(resource, { scopes: [server.read, server.write] });
      const command = exampleBlock(readFileSync(join(folder, 'README.md'), 'utf8'), 'gateway');
      const asPort = Number(new URL(as.issuer).port);
      gateway = new RunningShell(runnable(command, new Map([[8080, port], [9400, asPort]])), readerEnvironment(home));
      await gateway.line(/"event":"listening"/);
    });

    after(async () => {
      await gateway?.stop();
      await as?.close();
      if (home) rmSync(home, { recursive: true, force: true });
    });

    test("the gateway's policy check: every listed tool and resource has a rule, none open, no rule matches nothing", async () => {
      const summary = JSON.parse(await gateway.line(/"event":"summary"/)) as Summary;
      assert.equal(summary.tools.open, 0, gateway.stdout);
      assert.equal(summary.tools.protected, namedRules(policy.tools).size, 'every tool rule names a tool the server lists');
      if (summary.resources) assert.equal(summary.resources.open, 0);
      assert.equal(summary.unmatchedRules, 0, gateway.stderr);
      assert.doesNotMatch(gateway.stderr, /"event":"warning"/);
    });

    test('the policy names each tool the server lists, none under "*"', async () => {
      // files:admin / memory:admin implies every scope: this token sees the whole list.
      const all = await toolNames(await session(server.write.replace(/:write$/, ':admin')));
      assert.deepEqual(all, [...namedRules(policy.tools).keys()].sort());
    });

    test(`a ${server.read} token sees only the read tools, and calls one`, async () => {
      const reader = await session(server.read);
      const readTools = [...namedRules(policy.tools)].filter(([, scopes]) => scopes.includes(server.read)).map(([name]) => name).sort();
      assert.ok(readTools.length > 0);
      assert.deepEqual(await toolNames(reader), readTools);
      if (server.folder === 'filesystem') writeFileSync(join(home, 'mcp-files', 'hello.txt'), 'hello from the test');
      const { tool, args, answer } = server.readCall(home);
      assert.match(await reader.text(tool, args), answer);
      for (const [uri, scopes] of namedRules(policy.resources)) {
        if (!scopes.includes(server.read)) continue;
        const read = await reader.post({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri } });
        assert.equal(read.status, 200, read.text);
        assert.equal(read.json.result.contents[0].uri, uri);
      }
    });

    test(`a write with a ${server.read} token: 403 insufficient_scope naming ${server.write}; with ${server.write} it is written`, async () => {
      const { tool, args, written } = server.writeCall(home);
      const refused = await (await session(server.read)).call(tool, args);
      assert.equal(refused.status, 403, refused.text);
      const challenge = String(refused.headers['www-authenticate']);
      assert.match(challenge, /error="insufficient_scope"/);
      const scope = /scope="([^"]*)"/.exec(challenge)?.[1]?.split(' ') ?? [];
      assert.ok(scope.includes(server.write), challenge);
      assert.equal(written(), false, 'the refused call did not reach the server');

      const writer = await session(server.write);
      await writer.text(tool, args);
      assert.equal(written(), true);
    });
  });
}
