// The notes example's command line: configuration problems (an MCP_AUTH_* variable that is no setting too) exit with
// status 2 and one helpful message naming every one, before anything listens.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startTestIssuer } from '../helpers/fake-issuer.js';
import { REPOSITORY_ROOT, runScript, startScript, type CliRun } from '../helpers/run-cli.js';

const NOTES_SERVER = 'examples/notes-server.ts';

/** This process's environment without any MCP_AUTH_* variable, and `vars` on top (HOST loopback and PORT 0 unless they say). */
function notesEnvironment(vars: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCP_AUTH_') && k !== 'NODE_TEST_CONTEXT') env[k] = v;
  // Port 0: should a regression let it start, it cannot collide with anything.
  return Object.assign(env, { HOST: '127.0.0.1', PORT: '0' }, vars);
}

/** Runs the example with the given MCP_AUTH_* variables (every other one removed) until it exits; killed, and the test failed, after 15 s. */
function runNotesServer(vars: Record<string, string>): Promise<CliRun> {
  return runScript(NOTES_SERVER, [], { cwd: REPOSITORY_ROOT, env: notesEnvironment(vars), timeoutMs: 15_000 });
}

describe('examples/notes-server.ts from the command line', () => {
  test('without MCP_AUTH_ISSUER: exit 2, naming the variable and pointing at npm run demo', async () => {
    const result = await runNotesServer({});
    assert.equal(result.code, 2, result.stderr);
    // Two lines: the setting and how to set it, then the demo as the way to try it all; not the same advice twice.
    const lines = result.stderr.split('\n').filter((l) => l && !l.startsWith('(node:') && !l.startsWith('(Use `node'));
    assert.equal(lines.length, 2, result.stderr);
    assert.match(lines[0]!, /^configuration error: MCP_AUTH_ISSUER: is required: set it to your authorization server's issuer URL/);
    assert.match(lines[1]!, /npm run demo/);
    assert.equal(result.stdout, '');
  });

  test('a blank MCP_AUTH_ISSUER counts as unset', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: '   ' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^configuration error: MCP_AUTH_ISSUER: is required/m);
    assert.match(result.stderr, /npm run demo/);
  });

  test('a misspelt variable: exit 2, naming the variable meant, before anything listens', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_CHALENGE_SCOPES: 'notes:read' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^configuration error: MCP_AUTH_CHALENGE_SCOPES: is not a setting; did you mean MCP_AUTH_CHALLENGE_SCOPES\?$/m);
    assert.equal(result.stdout, '');
  });

  test("a gateway-only setting is named as the gateway's, which this program does not read; still exit 2", async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_POLICY_WATCH: 'true', MCP_AUTH_METRICS_PORT: '9464' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^ {2}MCP_AUTH_METRICS_PORT: is a setting of the gateway \(npx mcp-oauth-guard\), which this program does not read; unset it here$/m);
    assert.match(result.stderr, /^ {2}MCP_AUTH_POLICY_WATCH: is a setting of the gateway \(npx mcp-oauth-guard\), which this program does not read; unset it here$/m);
    assert.doesNotMatch(result.stderr, /not a setting/);
    assert.equal(result.stdout, '');
  });

  test('a PORT that is no number is named as PORT, with the other problems, not as the default resource it spoils', async () => {
    const result = await runNotesServer({ PORT: 'abc', MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_DPOP: 'always' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^ {2}PORT: must be a whole number from 0 to 65535 \(got "abc"\)$/m);
    assert.match(result.stderr, /^ {2}MCP_AUTH_DPOP: must be one of off, allow, require/m);
    assert.doesNotMatch(result.stderr, /resource \(default\)/);
  });

  test('several bad variables: one message naming each, on a line of its own', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUR: 'http://127.0.0.1:9', MCP_AUTH_MAX_BODY_BYTES: 'big', MCP_AUTH_DPOP: 'always' });
    assert.equal(result.code, 2, result.stderr);
    const lines = result.stderr.split('\n').filter((l) => l && !l.startsWith('(node:') && !l.startsWith('(Use `node'));
    assert.deepEqual(lines.slice(0, 5), [
      'configuration error: 4 settings need fixing:',
      '  MCP_AUTH_ISSUR: is not a setting; did you mean MCP_AUTH_ISSUER?',
      '  MCP_AUTH_MAX_BODY_BYTES: must be a whole number from 1 to 67108864 (got "big")',
      "  MCP_AUTH_ISSUER: is required: set it to your authorization server's issuer URL, e.g. https://auth.example.com (for a local one, in a clone of this repository: `npm run auth-server -- --resource <the MCP URL> --scopes <scopes>`)",
      '  MCP_AUTH_DPOP: must be one of off, allow, require (got "always")',
    ]);
    // The issuer is unset: the hint to a local authorization server follows.
    assert.match(result.stderr, /npm run demo/);
    assert.equal(result.stdout, '');
  });

  test('with a plain-http issuer off loopback: exit 2, naming the variable and asking for https', async () => {
    const result = await runNotesServer({ MCP_AUTH_ISSUER: 'http://example.com' });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^configuration error: MCP_AUTH_ISSUER: /m);
    assert.match(result.stderr, /https/);
    assert.match(result.stderr, /example\.com/);
    // One line of its own (runtime warnings, if any, are Node's).
    assert.equal(result.stderr.split('\n').filter((l) => l && !l.startsWith('(node:') && !l.startsWith('(Use `node')).length, 1, result.stderr);
    assert.equal(result.stdout, '');
  });

  test('a port in use: exit 1 with one line naming the port and PORT, no stack trace', async () => {
    const issuer = await startTestIssuer();
    const taken = createServer();
    try {
      const port = await new Promise<number>((resolve) => taken.listen(0, '127.0.0.1', () => resolve((taken.address() as AddressInfo).port)));
      const result = await runNotesServer({ MCP_AUTH_ISSUER: issuer.issuer, PORT: String(port) });
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr, `notes MCP server: cannot start: port ${port} is in use; set PORT to a free port\n`);
      assert.equal(result.stdout, '');
    } finally {
      taken.close();
      await issuer.close();
    }
  });

  test('the start-up line names the resource, the issuer, the policy and where it listens; a typo in the policy is warned about', async () => {
    const issuer = await startTestIssuer();
    const dir = mkdtempSync(join(tmpdir(), 'notes-cli-'));
    try {
      const policy = join(dir, 'policy.json');
      writeFileSync(policy, JSON.stringify({ tools: { whoami: [], notes_list: ['notes:read'], notes_ad: ['notes:write'], notes_clear: ['notes:admin'] } }));
      // A public resource (behind a proxy): the line names it, and the address listened on besides.
      const env = notesEnvironment({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_RESOURCE: 'https://notes.example.com/mcp', MCP_AUTH_POLICY: policy, MCP_AUTH_CHALLENGE_SCOPES: 'notes:read' });
      // Ready once the start-up line is whole; stopped (SIGTERM) and read to the end before anything is asserted.
      const notes = await startScript(NOTES_SERVER, [], /listening on [^\n]*\)\n/, { cwd: REPOSITORY_ROOT, env, timeoutMs: 15_000 });
      await notes.stop();
      const stdout = notes.stdout();
      const stderr = notes.stderr();
      const line = new RegExp(`^notes MCP server: https://notes\\.example\\.com/mcp  \\(issuer ${issuer.issuer.replace(/[.]/g, '\\.')}; policy ${policy.replace(/[.]/g, '\\.')}; listening on http://127\\.0\\.0\\.1:(\\d+)\\)\n`).exec(stdout);
      assert.ok(line, stdout);
      assert.notEqual(line[1], '0', 'the port actually bound, not PORT=0');
      assert.match(stderr, /warning: policy: tools with no rule, open to any token: notes_add/);
      assert.match(stderr, /warning: policy: the tool rule "notes_ad" matches nothing this server offers; did you mean "notes_add"\?/);
    } finally {
      await issuer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
