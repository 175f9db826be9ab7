// The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`), a client that refuses to call a tool it has not
// seen in tools/list, through the gateway. With MCP_AUTH_LISTS=all it sees the tool and its call gets the 403
// insufficient_scope naming the scope it needs; a token for that scope then makes the call. The CLI takes its
// token as a header and signs in to nothing here: each token, the stepped-up one too, is issued directly by the
// local authorization server's test API for the scopes named (no browser sign-in). With the default (filtered) it
// never sends the call: "tool_not_found", so the step-up cannot start. The real CLI runs as a child process,
// resolved from node_modules; without the package the test is skipped and says why.
import assert from 'node:assert/strict';
import { execFile } from '../helpers/child-process.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { NODE_SERVER, quote } from '../helpers/stdio-gateway.js';

const INSPECTOR = '@modelcontextprotocol/inspector';
const SCOPES = ['mcp:basic', 'mcp:math'];

/** The Inspector's launcher (its `inspector` bin, which takes `--cli`), or why it cannot be run. */
function findInspector(): { launcher: string; version: string } | { skip: string } {
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve(`${INSPECTOR}/package.json`);
  } catch {
    return { skip: `${INSPECTOR} is not installed (it is a dev dependency: npm install)` };
  }
  const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string; bin?: Record<string, string> };
  const bin = pkg.bin?.['inspector'];
  if (bin === undefined) return { skip: `${INSPECTOR} ${pkg.version} has no "inspector" bin` };
  return { launcher: resolve(dirname(manifest), bin), version: pkg.version };
}

const inspector = findInspector();
const skip = 'skip' in inspector ? inspector.skip : false;

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

let home: string;

/** Runs `inspector --cli <url> ...args` with a bearer token, as a user would from a shell. */
function runCli(url: string, token: string, args: readonly string[]): Promise<CliRun> {
  const launcher = (inspector as { launcher: string }).launcher;
  return new Promise((done) => {
    execFile(
      process.execPath,
      [launcher, '--cli', url, ...args, '--header', `Authorization: Bearer ${token}`],
      // Its own home: the CLI keeps a catalog and OAuth state under ~/.mcp-inspector. Not a TTY, so it never opens a browser.
      { env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1' }, timeout: 60_000, encoding: 'utf8' },
      (error, stdout, stderr) => done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** The JSON the CLI printed (a result on stdout, `{"error":…}` on stderr). */
function printed(text: string): any {
  return JSON.parse(text.trim());
}

describe(`the Inspector CLI through the gateway${'version' in inspector ? ` (${INSPECTOR} ${inspector.version})` : ''}`, { skip, timeout: 180_000 }, () => {
  let dir: string;
  let as: AuthorizationServer;
  const gateways: Array<{ gateway: RunningGateway; logs: string[] }> = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'inspector-step-up-'));
    home = join(dir, 'home');
    const policyFile = join(dir, 'policy.json');
    // `add` needs mcp:math; every other tool the base scope.
    writeFileSync(policyFile, JSON.stringify({ scopesSupported: SCOPES, requiredScopes: ['mcp:basic'], tools: { add: ['mcp:math'], '*': [] } }));
    as = await startAuthorizationServer({ extraScopes: SCOPES });
    for (const lists of ['all', 'filtered']) {
      const logs: string[] = [];
      const config = loadGatewayConfig({
        MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}`,
        MCP_AUTH_ISSUER: as.issuer,
        MCP_AUTH_POLICY: policyFile,
        MCP_AUTH_LISTS: lists,
        HOST: '127.0.0.1',
        PORT: '0',
      });
      const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
      as.addResource(gateway.resource, { scopes: SCOPES });
      gateways.push({ gateway, logs });
    }
  });
  after(async () => {
    for (const { gateway } of gateways) await gateway.shutdown();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The status of each tools/call the gateway answered, from its request log. */
  const callStatuses = (logs: readonly string[]): number[] =>
    logs.map((line) => JSON.parse(line) as { method?: string; status?: number }).filter((entry) => entry.method === 'tools/call').map((entry) => entry.status!);

  it('MCP_AUTH_LISTS=all: the tool is listed, the call gets 403 insufficient_scope, and a token the test issues for the scope it named makes it', async () => {
    const { gateway, logs } = gateways[0]!;
    const basic = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' });

    const listed = await runCli(gateway.resource, basic, ['--method', 'tools/list']);
    assert.equal(listed.code, 0, listed.stderr);
    const names = (printed(listed.stdout).tools as Array<{ name: string }>).map((tool) => tool.name);
    assert.ok(names.includes('add'), `add in ${names.join(', ')}`);

    const refused = await runCli(gateway.resource, basic, ['--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=1', 'b=2']);
    assert.notEqual(refused.code, 0);
    const error = printed(refused.stderr).error as { code: string; message: string };
    assert.notEqual(error.code, 'tool_not_found');
    const required = /Insufficient scope: required "([^"]+)"/.exec(error.message);
    assert.ok(required, error.message);
    assert.deepEqual(callStatuses(logs), [403], 'the gateway refused the call with the step-up 403');

    // The step-up, done by the test rather than by the CLI: the authorization server's test API issues a token for
    // the scopes the refusal named, with no sign-in.
    const scope = required[1]!;
    assert.match(scope, /\bmcp:math\b/);
    const stepped = await as.issueAccessToken({ resource: gateway.resource, scope, sub: 'alice' });
    const added = await runCli(gateway.resource, stepped, ['--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=1', 'b=2']);
    assert.equal(added.code, 0, added.stderr);
    assert.equal(printed(added.stdout).content[0].text, '3');
    assert.deepEqual(callStatuses(logs), [403, 200]);
  });

  it('MCP_AUTH_LISTS=filtered (the default): the CLI never sends the call (tool_not_found), so no step-up can start', async () => {
    const { gateway, logs } = gateways[1]!;
    const basic = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' });
    const refused = await runCli(gateway.resource, basic, ['--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=1', 'b=2']);
    assert.notEqual(refused.code, 0);
    const error = printed(refused.stderr).error as { code: string; message: string };
    assert.equal(error.code, 'tool_not_found', error.message);
    assert.deepEqual(callStatuses(logs), [], 'no tools/call reached the gateway');
  });
});
