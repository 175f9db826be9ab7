// The pins commands and check list each upstream to compare it with the pins. An upstream that takes only tokens
// exchanged for each caller (token_exchange) is listed as the caller whose access token --token-file gives, the
// token exchanged as the gateway does per request; without one it is named with what to do. An upstream of connected
// accounts is never listed by a command, and the output says that the running gateway pins it on first sight. Real
// parts: oidc-provider (token exchange enabled for the gateway's service client), the notes example protected by
// its own guard, a plain MCP server, the commands run in-process on real files.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { runCheckCommand } from '../../../src/gateway/cli/check/check-command.js';
import { runPinsCommand } from '../../../src/gateway/cli/pins/pins-command.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
/** The gateway's own resource, as the settings below make it: what a caller's token is issued for. */
const GATEWAY_RESOURCE = 'http://127.0.0.1:3000/mcp';

let as: AuthorizationServer;
let notes: RunningNotesServer;
let plain: PlainMcpServer;
let dir: string;
const grants: string[] = [];

before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp'], allowTokenExchange: (subject) => subject.sub !== 'mallory' });
  as.provider.on('grant.success', (ctx) => grants.push(String((ctx as { oidc: { params: { grant_type: unknown } } }).oidc.params.grant_type)));
  notes = await startNotesServer({ issuer: as.issuer });
  as.addResource(notes.url, { scopes: NOTES_SCOPES });
  as.addResource(GATEWAY_RESOURCE, { scopes: ['mcp'] });
  plain = await startPlainMcpServer({ tools: () => [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } }] });
  dir = mkdtempSync(join(tmpdir(), 'pins-per-caller-'));
});
after(async () => {
  await plain?.close();
  await notes?.close();
  await as?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a command in-process; its exit code and what it wrote. */
async function run(command: typeof runPinsCommand | typeof runCheckCommand, argv: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await command(argv, env, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
  return { code, stdout, stderr };
}

/** The gateway's settings in front of the notes example with token exchange, its pins in `pinFile`. */
function exchangeSettings(pinFile: string): Record<string, string> {
  return {
    MCP_AUTH_ISSUER: as.issuer,
    HOST: '127.0.0.1',
    PORT: '3000',
    MCP_AUTH_UPSTREAM: notes.url,
    MCP_AUTH_UPSTREAM_AUTH: 'token_exchange',
    MCP_AUTH_UPSTREAM_CLIENT_ID: as.serviceClient.clientId,
    MCP_AUTH_UPSTREAM_CLIENT_SECRET: as.serviceClient.clientSecret,
    MCP_AUTH_UPSTREAM_SCOPE: 'notes:read',
    MCP_AUTH_PIN_FILE: pinFile,
  };
}

/** A file holding a caller's access token for the gateway, as an operator would give it. */
async function tokenFile(sub: string): Promise<{ path: string; token: string }> {
  const token = await as.issueAccessToken({ resource: GATEWAY_RESOURCE, scope: 'mcp', sub });
  const path = join(dir, `${sub}.token`);
  writeFileSync(path, `${token}\n`);
  return { path, token };
}

describe('token_exchange upstreams and the pins', () => {
  it('pins update --token-file lists the upstream as that caller, through one exchange, and writes its pins; accept and check list it alike', async () => {
    const pinFile = join(dir, 'exchange.json');
    const { path, token } = await tokenFile('alice');
    grants.length = 0;
    const updated = await run(runPinsCommand, ['update', '--token-file', path], exchangeSettings(pinFile));
    assert.equal(updated.code, 0, updated.stdout + updated.stderr);
    assert.match(updated.stdout, /^upstream: \d+ tools pinned \(0 changed, \d+ new, 0 removed\)$/m);
    assert.deepEqual(grants, ['urn:ietf:params:oauth:grant-type:token-exchange']);
    const pinned = JSON.parse(readFileSync(pinFile, 'utf8')).servers.upstream;
    assert.deepEqual(Object.keys(pinned).sort(), ['notes_list', 'whoami'], 'the tools the notes server shows a notes:read token');
    assert.equal(pinned.whoami.by, 'update');

    const accepted = await run(runPinsCommand, ['accept', 'upstream', 'whoami', `--token-file=${path}`], exchangeSettings(pinFile));
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /upstream whoami: already pinned as listed/);

    const checked = await run(runCheckCommand, ['--token-file', path], exchangeSettings(pinFile));
    const line = checked.stdout.split('\n').find((text) => /pins upstream/.test(text));
    assert.match(line ?? '', /^ok\s+pins upstream: all \d+ tools as pinned$/, checked.stdout);
    for (const output of [updated, accepted, checked]) assert.ok(!(output.stdout + output.stderr).includes(token), 'the token is never printed');
  });

  it('without --token-file: named, with what to do; update exits 1 and keeps the pins, check skips it', async () => {
    const pinFile = join(dir, 'no-token.json');
    const updated = await run(runPinsCommand, ['update'], exchangeSettings(pinFile));
    assert.equal(updated.code, 1);
    assert.match(updated.stdout, /^upstream: not listed, its pins are kept: it takes only tokens exchanged for each caller \(token_exchange\).*give a caller's access token with --token-file <file\|->/m);
    const accepted = await run(runPinsCommand, ['accept', 'upstream', 'whoami'], exchangeSettings(pinFile));
    assert.equal(accepted.code, 1);
    assert.match(accepted.stderr, /upstream could not be listed, nothing accepted: .*--token-file/);
    const checked = await run(runCheckCommand, ['--json'], exchangeSettings(pinFile));
    const pins = JSON.parse(checked.stdout).results.filter((result: { check: string }) => result.check === 'pins');
    assert.deepEqual(pins.map((result: { subject: string; status: string }) => [result.subject, result.status]), [['upstream', 'skip']]);
    assert.match(pins[0].message, /token_exchange/);
    assert.match(pins[0].fix, /--token-file/);
  });

  it('a token the authorization server will not exchange: not listed, exit 1, and the token never printed', async () => {
    const pinFile = join(dir, 'refused.json');
    const { path, token } = await tokenFile('mallory');
    const updated = await run(runPinsCommand, ['update', '--token-file', path], exchangeSettings(pinFile));
    assert.equal(updated.code, 1);
    assert.match(updated.stdout, /^upstream: not listed, its pins are kept: the gateway's upstream credential could not be obtained/m);
    assert.ok(!(updated.stdout + updated.stderr).includes(token));
  });

  it('--token-file without a value is a usage error (exit 2)', async () => {
    const usage = await run(runPinsCommand, ['update', '--token-file'], exchangeSettings(join(dir, 'usage.json')));
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--token-file: needs a value/);
  });
});

describe('connected upstreams and the pins', () => {
  it('are named, said to be pinned on first sight by the running gateway; update pins the other servers and succeeds', async () => {
    const pinFile = join(dir, 'connected.json');
    const config = join(dir, 'gateway.json');
    const servers = { notes: { url: notes.url, auth: { mode: 'connected', clientId: 'gateway-at-notes', clientSecretEnv: 'NOTES_SECRET', scope: 'notes:read' } }, plain: { url: plain.url } };
    writeFileSync(config, JSON.stringify({ gateway: { issuer: as.issuer, host: '127.0.0.1', port: 3000, loginClientId: 'gateway-login', tokenStore: join(dir, 'tokens'), pinFile }, servers }));
    const env = { MCP_AUTH_CONFIG: config, NOTES_SECRET: 'notes-secret', MCP_AUTH_TOKEN_STORE_SECRET: randomBytes(32).toString('base64url'), MCP_AUTH_LOGIN_CLIENT_SECRET: 'login-secret' };
    const { path } = await tokenFile('alice');
    for (const argv of [['update'], ['update', '--token-file', path]]) {
      const updated = await run(runPinsCommand, argv, env);
      assert.equal(updated.code, 0, updated.stdout + updated.stderr);
      assert.match(updated.stdout, /^notes: not listed, its pins are kept: .*connected account \(connected\).*the running gateway pins its tools on first sight/m);
      assert.match(updated.stdout, /^plain: 1 tool pinned/m);
    }
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(pinFile, 'utf8')).servers), ['plain']);
    const accepted = await run(runPinsCommand, ['accept', 'notes', 'whoami'], env);
    assert.equal(accepted.code, 1);
    assert.match(accepted.stderr, /notes could not be listed, nothing accepted: .*pins its tools on first sight/);
    const checked = await run(runCheckCommand, ['--json'], env);
    const line = JSON.parse(checked.stdout).results.find((result: { check: string; subject?: string }) => result.check === 'pins' && result.subject === 'notes');
    assert.equal(line?.status, 'skip', checked.stdout);
    assert.match(line.fix, /running gateway pins its tools on first sight/);
  });
});
