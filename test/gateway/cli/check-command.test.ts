// `mcp-oauth-guard check` against a real authorization server (oidc-provider on 127.0.0.1), a real HTTP upstream
// and real stdio upstream processes: a healthy setup, then each failure an operator would otherwise debug by
// hand, with its line, its fix and the exit code. The command runs in this process (runCheckCommand, what the CLI
// calls with its argv and environment), so that the cases run side by side without a program start each; the
// real CLI runs where the process matters: a healthy setup, standard input, and the exit code of bad settings.
// Every run is given a free PORT: check binds it, and a port in use would add a warning.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createUpstreamHandler, startUpstreamServer } from '../../../examples/gateway/upstream-server.js';
import { GATEWAY_SETTINGS } from '../../../src/gateway/config/gateway-config.js';
import { SERVICE_CLIENT_ID, startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startTestIssuer } from '../../helpers/fake-issuer.js';
import { freePort } from '../../helpers/free-port.js';
import { runGatewayCli, type CliRun } from '../../helpers/run-cli.js';
import { runCheckCommand } from '../../../src/gateway/cli/check/check-command.js';

const STDIO_SERVER = `"${process.execPath}" test/fixtures/stdio/server.mjs`;

/** Runs `check …` in this process with `env` as its whole environment, PORT a free port unless `env` names one. */
async function runCheck(args: string[], env: Record<string, string>): Promise<CliRun> {
  const run = { code: null as number | null, stdout: '', stderr: '' };
  const output = { stdout: (text: string) => void (run.stdout += text), stderr: (text: string) => void (run.stderr += text) };
  run.code = await runCheckCommand(args, { PORT: String(await freePort()), ...env }, output);
  return run;
}

/** Runs the real `mcp-oauth-guard check …` program (test/helpers/child-process.ts gives it a free PORT unless `env` names one). */
function runCheckProgram(args: string[], env: Record<string, string>, input?: string): Promise<CliRun> {
  return runGatewayCli(['check', ...args], env, 30_000, input);
}

/** A resource on a free port, which the authorization server issues tokens for, and the PORT that makes it the default. */
async function freeResource(): Promise<{ port: string; resource: string }> {
  const port = String(await freePort());
  const resource = `http://127.0.0.1:${port}/mcp`;
  as.addResource(resource, { scopes: ['counter:read', 'counter:write'] });
  return { port, resource };
}

/** The report's line for `check` (and `subject`), with the lines indented under it. */
function entry(stdout: string, start: string): string {
  const lines = stdout.split('\n');
  const at = lines.findIndex((line) => line.slice(6).startsWith(start));
  assert.ok(at !== -1, `no line for "${start}" in:\n${stdout}`);
  const block = [lines[at]!];
  for (const line of lines.slice(at + 1)) {
    if (!line.startsWith('      ')) break;
    block.push(line);
  }
  return block.join('\n');
}

let as: AuthorizationServer;
let upstream: { url: string; server: Server };
let dir: string;
let closedPort: number;

describe('mcp-oauth-guard check', () => {
  before(async () => {
    as = await startAuthorizationServer({ resources: { 'http://127.0.0.1:8080/mcp': { scopes: ['counter:read', 'counter:write'] } } });
    upstream = await startUpstreamServer('127.0.0.1', 0);
    dir = mkdtempSync(join(tmpdir(), 'check-command-'));
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    closedPort = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, 'close');
  });
  after(async () => {
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a healthy setup: every line ok, exit 0, and no secret printed', async () => {
    const secret = as.serviceClient.clientSecret;
    const { port } = await freeResource();
    const run = await runCheckProgram(['--upstream', upstream.url, '--policy', 'examples/gateway/policy.json'], {
      PORT: port,
      MCP_AUTH_ISSUER: as.issuer,
      MCP_AUTH_INTROSPECTION_CLIENT_ID: SERVICE_CLIENT_ID,
      MCP_AUTH_INTROSPECTION_CLIENT_SECRET: secret,
    });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(run.stderr, '');
    const out = run.stdout;
    const resource = entry(out, 'resource');
    assert.ok(resource.startsWith(`ok    resource http://127.0.0.1:${port}/mcp: canonical (RFC 8707); the default from HOST and PORT`), resource);
    assert.ok(resource.includes(`clients find the metadata at http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`), resource);
    assert.equal(entry(out, `issuer ${as.issuer}:`), `ok    issuer ${as.issuer}: metadata found; its issuer is exactly the configured one`);
    assert.equal(entry(out, `authorization server ${as.issuer}:`), `ok    authorization server ${as.issuer}: what MCP clients need: authorization and token endpoints, PKCE with S256, dynamic client registration (registration_endpoint)`);
    const keys = entry(out, `keys ${as.jwksUri}:`);
    assert.match(keys, /^ok {4}keys \S+: 1 of 1 key usable \(allowed algorithms: RS256, .*ES256/);
    assert.match(keys, /\n {6}kid \S+ kty EC crv P-256.*: usable for ES256$/);
    assert.match(entry(out, 'introspection'), /^ok {4}introspection http:\/\/127\.0\.0\.1:\d+\/\S+: the client authenticates: a made-up token is answered active: false$/);
    assert.equal(entry(out, 'upstream'), `ok    upstream ${upstream.url}: initialize and the lists answered: 3 tools, 0 prompts, 0 resources, 0 resource templates`);
    assert.match(entry(out, 'policy examples/gateway/policy.json'), /^ok {4}policy examples\/gateway\/policy\.json: read: 4 tool, 0 prompt and 0 resource rules$/);
    assert.match(entry(out, 'policy: every'), /^ok {4}policy: every item the upstream lists has a rule, and every rule matches: tools 2 protected, 1 open on purpose$/);
    assert.ok(out.endsWith('\nall checks passed (exit code 0)\n'), out);
    assert.ok(!out.includes(secret), 'the introspection secret is never printed');
  });

  it("the notes example's settings (MCP_AUTH_*, HOST, PORT; no upstream): the guard's checks pass, the upstream's are skipped; exit 0", async () => {
    const port = String(await freePort());
    const run = await runCheck(['--json'], { MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: port });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const report = JSON.parse(run.stdout) as { ok: boolean; exitCode: number; results: { check: string; status: string; subject?: string }[] };
    assert.deepEqual([report.ok, report.exitCode], [true, 0]);
    assert.deepEqual(
      report.results.map((result) => [result.check, result.status]),
      [['resource', 'ok'], ['listen', 'ok'], ['issuer', 'ok'], ['authorization server', 'ok'], ['keys', 'ok'], ['upstream', 'skip'], ['policy', 'skip']],
    );
    assert.equal(report.results[0]!.subject, `http://127.0.0.1:${port}/mcp`);
    assert.equal(report.results[1]!.subject, `127.0.0.1:${port}`);
  });

  it('listen: a port in use warns (exit 0, 1 with --strict), an address the host does not have fails, the metrics port too', async () => {
    const holder = createServer();
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const taken = (holder.address() as AddressInfo).port;
    const metricsPort = await freePort();
    try {
      const env = { MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: String(taken), MCP_AUTH_METRICS_PORT: String(metricsPort) };
      const run = await runCheck([], env);
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.equal(
        entry(run.stdout, `listen 127.0.0.1:${taken}:`),
        `warn  listen 127.0.0.1:${taken}: the MCP endpoint: in use now; a server started with these settings could not listen while it is (one already running with them holds it too)\n      fix: stop what listens there, or choose another PORT (--port)`,
      );
      assert.equal(entry(run.stdout, `listen 127.0.0.1:${metricsPort}:`), `ok    listen 127.0.0.1:${metricsPort}: the metrics listener: free, a server can listen there`);
      assert.equal((await runCheck(['--strict'], env)).code, 1);
      // The port was only bound for a moment: it is free again.
      const probe = createServer();
      probe.listen(metricsPort, '127.0.0.1');
      await once(probe, 'listening');
      probe.close();
    } finally {
      holder.close();
    }
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): no host has it.
    const elsewhere = await runCheck([], { MCP_AUTH_ISSUER: as.issuer, HOST: '192.0.2.1', PORT: '3000', MCP_AUTH_RESOURCE: 'http://127.0.0.1:3000/mcp' });
    assert.equal(elsewhere.code, 1, elsewhere.stdout + elsewhere.stderr);
    assert.equal(
      entry(elsewhere.stdout, 'listen 192.0.2.1:3000:'),
      'FAIL  listen 192.0.2.1:3000: the MCP endpoint: this host has no such address\n      fix: set HOST (--host) to an address of this host (0.0.0.0 or :: for all of them)',
    );
  });

  it('an issuer that is down: the line says so, with the fix; an application without an upstream is checked too; exit 1', async () => {
    const port = String(await freePort());
    const run = await runCheck([], { MCP_AUTH_ISSUER: `http://127.0.0.1:${closedPort}`, PORT: port, MCP_AUTH_HTTP_TIMEOUT_MS: '2000' });
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const issuer = entry(run.stdout, `issuer http://127.0.0.1:${closedPort}:`);
    assert.match(issuer, /^FAIL {2}issuer \S+: the authorization server cannot be reached: fetch failed \(ECONNREFUSED\)$/m);
    assert.match(issuer, /fix: start the authorization server, or correct the host and port in MCP_AUTH_ISSUER$/);
    assert.match(entry(run.stdout, 'keys'), /^skip {2}keys \S+: not checked, as the issuer's metadata was not usable \(see its line\)$/);
    assert.match(entry(run.stdout, 'authorization server'), /^skip {2}authorization server \S+: not checked, as the issuer's metadata was not usable \(see its line\)$/);
    assert.ok(entry(run.stdout, 'resource').startsWith(`ok    resource http://127.0.0.1:${port}/mcp: `), run.stdout);
    assert.match(entry(run.stdout, 'upstream'), /^skip {2}upstream: none configured/);
    assert.match(entry(run.stdout, 'policy'), /^skip {2}policy: no policy file/);
    assert.ok(run.stdout.endsWith('\n1 failure: requests would fail (exit code 1)\n'), run.stdout);
  });

  it('an issuer URL that is no authorization server (404), and one that differs by a trailing slash, shown character by character', async () => {
    const notFound = `${as.issuer}/tenant`;
    const slashed = `${as.issuer}/`;
    const run = await runCheck(['--issuer', `${notFound},${slashed}`], {});
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const missing = entry(run.stdout, `issuer ${notFound}:`);
    assert.match(missing, /^FAIL {2}issuer \S+: no metadata document at either well-known location \(HTTP 404\): this URL is not an authorization server's issuer$/m);
    assert.ok(missing.includes(`GET ${as.issuer}/.well-known/oauth-authorization-server/tenant: HTTP 404`), missing);
    assert.ok(missing.includes(`GET ${as.issuer}/tenant/.well-known/openid-configuration: HTTP 404`), missing);
    assert.match(missing, /fix: set MCP_AUTH_ISSUER to the "issuer" value of your authorization server's metadata/);

    const mismatch = entry(run.stdout, `issuer ${slashed}:`);
    const lines = mismatch.split('\n');
    assert.equal(lines[0], `FAIL  issuer ${slashed}: the metadata names another issuer: the configured issuer ends with a "/" that the metadata's lacks; tokens carry the metadata's spelling in "iss", so every token would be refused`);
    assert.equal(lines[1], `      configured: "${slashed}"`);
    assert.equal(lines[2], `      metadata:   "${as.issuer}"`);
    // The caret sits under the "/" the metadata lacks.
    assert.equal(lines[3]!.indexOf('^'), lines[1]!.lastIndexOf('/'));
    assert.match(lines[3]!, new RegExp(`\\^ character ${slashed.length}$`));
    assert.equal(lines[4], `      fix: set MCP_AUTH_ISSUER to exactly "${as.issuer}"`);
    assert.match(run.stdout, /\n2 failures: requests would fail \(exit code 1\)\n$/);
  });

  it('with MCP_AUTH_JWKS_URI set, an issuer that is down, is no authorization server or names another issuer still fails: clients need its metadata to get a token, and tokens carry its issuer; exit 1', async () => {
    const cases = [
      [`http://127.0.0.1:${closedPort}`, /^FAIL {2}issuer \S+: the authorization server cannot be reached: /],
      [`${as.issuer}/tenant`, /^FAIL {2}issuer \S+: no metadata document at either well-known location \(HTTP 404\)/],
      [`${as.issuer}/`, /^FAIL {2}issuer \S+: the metadata names another issuer: /],
    ] as const;
    for (const [issuer, line] of cases) {
      const run = await runCheck(['--issuer', issuer, '--jwks-uri', as.jwksUri], { MCP_AUTH_HTTP_TIMEOUT_MS: '2000' });
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(entry(run.stdout, `issuer ${issuer}:`), line);
      assert.doesNotMatch(run.stdout, /does not need it/);
      assert.match(entry(run.stdout, `keys ${as.jwksUri}:`), /^ok {4}keys /);
      assert.match(run.stdout, /\n1 failure: requests would fail \(exit code 1\)\n$/);
    }
  });

  it("what MCP clients require of the authorization server: PKCE with S256 and both endpoints, else FAIL; no way to register a client, a warning; one line per issuer", async () => {
    // The endpoints are only read, never called.
    const authorize = { authorization_endpoint: 'http://127.0.0.1:1/authorize' };
    const plainOnly = await startTestIssuer({ metadata: { ...authorize, code_challenge_methods_supported: ['plain'], registration_endpoint: 'http://127.0.0.1:1/reg' } });
    const noEndpoints = await startTestIssuer({ metadata: { code_challenge_methods_supported: ['S256'], client_id_metadata_document_supported: true, token_endpoint: undefined } });
    const noRegistration = await startTestIssuer({ metadata: { ...authorize, code_challenge_methods_supported: ['S256'] } });
    try {
      const run = await runCheck(['--issuer', [plainOnly.issuer, noEndpoints.issuer, noRegistration.issuer].join(',')], {});
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.equal(
        entry(run.stdout, `authorization server ${plainOnly.issuer}:`),
        `FAIL  authorization server ${plainOnly.issuer}: code_challenge_methods_supported lists [plain], not S256, so MCP clients refuse to proceed\n` +
          '      fix: enable PKCE with S256 on the authorization server so that its metadata lists "S256" in code_challenge_methods_supported',
      );
      assert.equal(
        entry(run.stdout, `authorization server ${noEndpoints.issuer}:`),
        `FAIL  authorization server ${noEndpoints.issuer}: the metadata has no authorization_endpoint and no token_endpoint, so clients cannot run the authorization code flow\n` +
          '      fix: have the authorization server publish authorization_endpoint and token_endpoint (RFC 8414 §2)',
      );
      assert.equal(
        entry(run.stdout, `authorization server ${noRegistration.issuer}:`),
        `warn  authorization server ${noRegistration.issuer}: neither client_id_metadata_document_supported nor a registration_endpoint: only clients given a client id beforehand can sign in\n` +
          '      fix: enable Client ID Metadata Documents or dynamic client registration (RFC 7591) on the authorization server, or pre-register each MCP client',
      );
      assert.equal(run.stdout.split('\n').filter((line) => line.slice(6).startsWith('authorization server ')).length, 3);
      assert.match(run.stdout, /\n2 failures, 1 warning: requests would fail \(exit code 1\)\n$/);
    } finally {
      await Promise.all([plainOnly.close(), noEndpoints.close(), noRegistration.close()]);
    }
  });

  it('signing keys with no allowed algorithm, and introspection credentials refused (401): each line with its fix; no secret printed', async () => {
    const run = await runCheck(['--algorithms', 'RS256,PS256'], {
      MCP_AUTH_ISSUER: as.issuer,
      MCP_AUTH_INTROSPECTION_CLIENT_ID: SERVICE_CLIENT_ID,
      MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 'not-the-secret-0123456789',
    });
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const keys = entry(run.stdout, 'keys');
    assert.match(keys, /^FAIL {2}keys \S+: no key can verify an allowed algorithm, so every JWT would be refused \(allowed algorithms: RS256, PS256\)$/m);
    assert.match(keys, /\n {6}kid \S+ kty EC crv P-256.*: not usable, (its alg ES256 is not allowed|it verifies ES256, none of them allowed) \(MCP_AUTH_ALGORITHMS\)\n/);
    assert.match(keys, /fix: set MCP_AUTH_ALGORITHMS to the algorithm the authorization server signs with/);
    const introspection = entry(run.stdout, 'introspection');
    assert.match(introspection, /^FAIL {2}introspection \S+: the endpoint refused the client's credentials \(HTTP 401 invalid_client\)$/m);
    assert.match(introspection, /fix: check MCP_AUTH_INTROSPECTION_CLIENT_ID and MCP_AUTH_INTROSPECTION_CLIENT_SECRET/);
    assert.ok(!run.stdout.includes('not-the-secret') && !run.stderr.includes('not-the-secret'), 'the secret is never printed');
  });

  it('an introspection endpoint that fails (HTTP 503): the status it answered and a server-error fix, not the credentials; exit 1', async () => {
    const failing = createServer((_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance'));
    failing.listen(0, '127.0.0.1');
    await once(failing, 'listening');
    const endpoint = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/introspect`;
    try {
      const run = await runCheck([], {
        MCP_AUTH_ISSUER: as.issuer,
        MCP_AUTH_INTROSPECTION_CLIENT_ID: SERVICE_CLIENT_ID,
        MCP_AUTH_INTROSPECTION_CLIENT_SECRET: as.serviceClient.clientSecret,
        MCP_AUTH_INTROSPECTION_ENDPOINT: endpoint,
      });
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.equal(
        entry(run.stdout, 'introspection'),
        `FAIL  introspection ${endpoint}: the endpoint answered HTTP 503, a server error: the credentials could not be judged\n` +
          '      fix: the authorization server failed: check its logs and that MCP_AUTH_INTROSPECTION_ENDPOINT is its RFC 7662 endpoint, then run check again',
      );
    } finally {
      failing.closeAllConnections();
      failing.close();
    }
  });

  it('a policy with a typo (ad for add) and open tools: warnings with fixes, exit 0; with --strict --json, exit 1 and the same findings as data', async () => {
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ tools: { ad: ['counter:read'], echo: ['counter:read'] } }));
    const settings = ['--upstream-command', STDIO_SERVER, '--policy', policy];
    const run = await runCheck(settings, { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(entry(run.stdout, 'upstream'), /^ok {4}upstream \S+: initialize and the lists answered: \d+ tools, 0 prompts/);
    const typo = entry(run.stdout, 'policy: the tool rule');
    assert.equal(typo, `warn  policy: the tool rule "ad" matches nothing the upstream lists; did you mean "add"?\n      fix: rename "ad" to "add" in the policy file (${policy})`);
    const open = entry(run.stdout, 'policy: ');
    assert.match(open, /^warn {2}policy: \d+ of \d+ tools have no rule \(neither their own nor "\*"\), so any valid token may use them\n {6}"add", "whoami", /);
    assert.ok(!open.includes('"echo"'), 'echo has a rule');
    assert.match(open, /fix: add a rule for each under "tools" in the policy file/);
    assert.match(run.stdout, /\n2 warnings: requests would work, though not everything as meant \(exit code 0\)\n$/);

    const strict = await runCheck(['--strict', '--json', ...settings], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(strict.code, 1, strict.stdout + strict.stderr);
    const report = JSON.parse(strict.stdout) as { ok: boolean; exitCode: number; failures: number; warnings: number; results: { check: string; status: string; message: string; fix?: string }[] };
    assert.deepEqual([report.ok, report.exitCode, report.failures, report.warnings], [false, 1, 0, 2]);
    const rule = report.results.find((result) => result.message.startsWith('the tool rule'));
    assert.deepEqual([rule?.check, rule?.status, rule?.fix], ['policy', 'warn', `rename "ad" to "add" in the policy file (${policy})`]);
  });

  it("a scope the policy requires that the authorization server's scopes_supported lacks: a warning naming the scope, its rule and the fix; \"*\" rules aside", async () => {
    const policy = join(dir, 'policy-scopes.json');
    writeFileSync(policy, JSON.stringify({ tools: { counter_get: ['counter:raed'], counter_increment: ['counter:write'], whoami: [], '*': ['counter:admin'] } }));
    const run = await runCheck(['--upstream', upstream.url, '--policy', policy], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const line = entry(run.stdout, `policy ${as.issuer}:`);
    assert.equal(
      line,
      `warn  policy ${as.issuer}: the policy requires the scope "counter:raed" (tools."counter_get"), which the authorization server's scopes_supported does not list, so no token may carry it\n` +
        `      fix: correct the scope in the policy file (${policy}) if it is misspelt, or add "counter:raed" to the scopes the authorization server offers`,
    );
    assert.ok(!run.stdout.includes('"counter:admin"'), 'a "*" rule may require a scope nobody is given: that is how unlisted tools are refused');
    assert.match(run.stdout, /\n1 warning: requests would work, though not everything as meant \(exit code 0\)\n$/);
  });

  it('--token-file: an accepted token, weighed against the policy (the tools it may call, those refused with the scopes they lack), never printed', async () => {
    const { port, resource } = await freeResource();
    const token = await as.issueAccessToken({ resource, scope: 'counter:read', sub: 'alice' });
    const file = join(dir, 'token');
    writeFileSync(file, `${token}\n`);
    const run = await runCheck(['--upstream', upstream.url, '--policy', 'examples/gateway/policy.json', '--token-file', file], { MCP_AUTH_ISSUER: as.issuer, PORT: port });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const lines = entry(run.stdout, 'token:').split('\n');
    assert.equal(lines[0], 'ok    token: accepted: the gateway would serve it');
    assert.match(lines[1]!, new RegExp(`^ {6}issuer ${as.issuer}, audience "http://127\\.0\\.0\\.1:${port}/mcp", expires in \\d+ s \\(\\d{4}-`));
    assert.match(lines[2]!, /^ {6}subject alice, client mcp-oauth-guard-service, a JWT signed with [A-Z]{2}\d{3}$/);
    assert.equal(lines[3], '      scopes: counter:read');
    assert.equal(lines[4], '      may call: "whoami" (rule tools.whoami), "counter_get" (rule tools.counter_get)');
    assert.equal(lines[5], '      refused with 403: "counter_increment" (rule tools.counter_increment needs counter:write)');
    assert.ok(!run.stdout.includes(token) && !run.stderr.includes(token), 'the token is never printed');
  });

  it('--token-file with conditions: the rule and condition that decided each tool, a condition on the arguments decided per call', async () => {
    const { port, resource } = await freeResource();
    const policy = join(dir, 'policy-conditions.json');
    writeFileSync(
      policy,
      JSON.stringify({
        tools: {
          whoami: { when: "'finance' in claims.groups" },
          counter_get: { scopes: ['counter:read'], when: "claims.tenant == 'globex'" },
          counter_increment: { when: 'mcp.arguments.by <= 10' },
        },
      }),
    );
    const token = await as.issueAccessToken({ resource, scope: 'counter:read', sub: 'alice', extra: { groups: ['finance'], tenant: 'acme' } });
    const file = join(dir, 'token-conditions');
    writeFileSync(file, token);
    const run = await runCheck(['--upstream', upstream.url, '--policy', policy, '--token-file', file], { MCP_AUTH_ISSUER: as.issuer, PORT: port });
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const lines = entry(run.stdout, 'token:').split('\n');
    assert.equal(lines[4], '      may call: "whoami" (rule tools.whoami)');
    assert.equal(lines[5], `      listed, decided per call by a condition on the arguments: "counter_increment" (rule tools.counter_increment, when "mcp.arguments.by <= 10")`);
    assert.equal(lines[6], `      refused with 403: "counter_get" (rule tools.counter_get: when "claims.tenant == 'globex'" is false)`);
    // Weighed without a call's arguments, the argument condition is decided per call, not a rule that failed: the
    // program writes no warning that it could not be decided.
    const program = await runCheckProgram(['--upstream', upstream.url, '--policy', policy, '--token-file', file], { MCP_AUTH_ISSUER: as.issuer, PORT: port });
    assert.equal(program.code, 0, program.stdout + program.stderr);
    assert.ok(program.stdout.includes('listed, decided per call by a condition on the arguments'), program.stdout);
    assert.ok(!program.stderr.includes('could not be decided'), program.stderr);
  });

  it('--token-file -: a token for another resource, read from standard input, is refused in the words the gateway logs, with the fix; exit 1', async () => {
    as.addResource('http://127.0.0.1:8081/other', { scopes: ['counter:read'] });
    const token = await as.issueAccessToken({ resource: 'http://127.0.0.1:8081/other', scope: 'counter:read' });
    const port = String(await freePort());
    const run = await runCheckProgram(['--token-file', '-'], { MCP_AUTH_ISSUER: as.issuer, PORT: port }, token);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const block = entry(run.stdout, 'token:');
    assert.match(block, /^FAIL {2}token: refused with HTTP 401 \(token_audience\): access token was issued for http:\/\/127\.0\.0\.1:8081\/other \(aud\), not for this resource: expected http:\/\/127\.0\.0\.1:\d+\/mcp$/m);
    assert.ok(block.includes(`expected http://127.0.0.1:${port}/mcp`), block);
    assert.match(block, /fix: ask the authorization server for a token for this resource \(RFC 8707 resource parameter\)/);
    assert.ok(!run.stdout.includes(token), 'the token is never printed');
    // A missing file is a usage error, named as every secret file's is.
    const missing = await runCheck(['--token-file', join(dir, 'no-such-token')], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(missing.code, 2, missing.stdout + missing.stderr);
    assert.match(missing.stderr, /--token-file: cannot read ".*no-such-token" \(ENOENT\)/);
  });

  it("a protected HTTP upstream: without credentials a 401 with the fix; with the gateway's static token it is listed, the token never printed", async () => {
    const token = 'upstream-static-token-0123456789';
    const handler = createUpstreamHandler();
    const protectedUpstream = createServer((req, res) => {
      if (req.headers.authorization !== `Bearer ${token}`) res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      else handler(req, res);
    });
    protectedUpstream.listen(0, '127.0.0.1');
    await once(protectedUpstream, 'listening');
    const url = `http://127.0.0.1:${(protectedUpstream.address() as AddressInfo).port}/mcp`;
    try {
      const refused = await runCheck(['--upstream', url], { MCP_AUTH_ISSUER: as.issuer });
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      const line = entry(refused.stdout, 'upstream');
      assert.match(line, /^FAIL {2}upstream \S+: initialize or a list failed: .*HTTP 401/m);
      assert.match(line, /fix: the upstream wants credentials: set MCP_AUTH_UPSTREAM_AUTH \(static or client_credentials\) and its settings$/);

      const listed = await runCheck(['--upstream', url, '--upstream-auth', 'static'], { MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_UPSTREAM_TOKEN: token });
      assert.equal(entry(listed.stdout, 'upstream'), `ok    upstream ${url}: initialize and the lists answered: 3 tools, 0 prompts, 0 resources, 0 resource templates`);
      assert.ok(!listed.stdout.includes(token) && !listed.stderr.includes(token), 'the upstream token is never printed');
    } finally {
      protectedUpstream.closeAllConnections();
      protectedUpstream.close();
    }
  });

  it('an upstream command that exits at once: the upstream line fails with its exit code and stderr, and the policy is not compared; exit 1', async () => {
    const run = await runCheck(['--upstream-command', `"${process.execPath}" -e "process.stderr.write('cannot open server.py\\n'); process.exit(3)"`], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const failed = entry(run.stdout, 'upstream');
    assert.match(failed, /^FAIL {2}upstream \S+: initialize or a list failed: initialize: /m);
    assert.match(failed, /\n {6}the process exited with code 3\n/);
    assert.match(failed, /\n {6}stderr: "cannot open server\.py"\n/);
    assert.match(failed, /fix: run MCP_AUTH_UPSTREAM_COMMAND by hand: it must stay running and speak MCP/);
    assert.match(entry(run.stdout, 'policy: open tools'), /^skip {2}policy: open tools and rules matching nothing: not checked, as the upstream could not be listed$/);
  });

  it('bad settings exit 2 with the configuration error, as the gateway reports it; check --help lists every setting', async () => {
    const port = await runCheckProgram(['--port', 'eighty'], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(port.code, 2);
    assert.equal(port.stdout, '');
    assert.match(port.stderr, /^mcp-oauth-guard check: configuration error: PORT \(--port\): /);
    // A bad flag and a bad setting together, in one message, as the gateway reports them.
    const bad = await runCheck(['--upstreem', 'x', '--port', 'eighty'], { MCP_AUTH_ISSUER: as.issuer });
    assert.equal(bad.code, 2);
    assert.equal(
      bad.stderr,
      'mcp-oauth-guard check: configuration error: 2 settings need fixing:\n  --upstreem: is not a known flag; did you mean --upstream?\n  PORT (--port): must be a whole number from 0 to 65535 (got "eighty")\n',
    );
    assert.doesNotMatch(bad.stderr, /\bat .*\.ts:\d+/);
    const misspelt = await runCheck([], { MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_POLICIES: 'policy.json' });
    assert.equal(misspelt.code, 2);
    assert.match(misspelt.stderr, /^mcp-oauth-guard check: configuration error: .*MCP_AUTH_POLICIES.*did you mean MCP_AUTH_POLICY\?/);
    // The MCP_AUTH_ every setting shares is no evidence of a typo: only what follows it is compared.
    const unrelated = await runCheck([], { MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_TOKEN: 'x', MCP_AUTH_SCOPES: 'y' });
    assert.equal(unrelated.code, 2);
    assert.equal(
      unrelated.stderr,
      'mcp-oauth-guard check: configuration error: 2 settings need fixing:\n  MCP_AUTH_SCOPES: is not a setting; correct its name, or unset it\n  MCP_AUTH_TOKEN: is not a setting; correct its name, or unset it\n',
    );

    const help = await runCheckProgram(['--help'], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: mcp-oauth-guard check \[--json\] \[--strict\]/);
    assert.match(help.stdout, /Exit codes: 0 when everything would work/);
    // A misspelt variable is a settings error (exit 2), never a warning --strict would turn into exit 1.
    assert.doesNotMatch(help.stdout, /--strict\n[^\n]*unknown variable/);
    assert.match(help.stdout, /2 on a configuration error \(a misspelt MCP_AUTH_\* variable among them\) or bad usage/);
    for (const setting of GATEWAY_SETTINGS) assert.ok(help.stdout.includes(setting.env), `check --help names ${setting.env}`);
  });
});
