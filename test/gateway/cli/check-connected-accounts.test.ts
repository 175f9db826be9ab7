// check, for connected accounts: the token store is written and read back sealed, the sign-in issuer has what the
// connect page needs (and the redirect URI to register is named), and each connected upstream's authorization server
// is found, with how the gateway will be its client.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { runChecks } from '../../../src/gateway/cli/check/run-checks.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { freePort } from '../../helpers/free-port.js';

const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 29 + 3) % 256)).toString('base64url');
/** The login client at the gateway's issuer, and the gateway's client at the notes authorization server. */
const LOGIN = { clientId: 'gateway-login', clientSecret: 'gateway-login-secret' } as const;
const NOTES_CLIENT = { clientId: 'gw-notes', clientSecret: 'gw-notes-secret' } as const;
let gatewayAs: AuthorizationServer;
let notesAs: AuthorizationServer;
let notes: RunningNotesServer;
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'check-connected-'));
  // check cannot see the redirect URIs registered; any will do here.
  gatewayAs = await startAuthorizationServer({ clients: [{ ...LOGIN, redirectUris: ['http://127.0.0.1/connect/callback'] }] });
  notesAs = await startAuthorizationServer({ clients: [{ ...NOTES_CLIENT, redirectUris: ['http://127.0.0.1/connect/callback/upstream'] }] });
  notes = await startNotesServer({ issuer: notesAs.issuer });
  notesAs.addResource(notes.url, { scopes: ['notes:read'] });
});
after(async () => {
  await notes?.close();
  await notesAs?.close();
  await gatewayAs?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connectedLines(extra: Record<string, string>) {
  const port = await freePort();
  const config = loadGatewayConfig({
    MCP_AUTH_ISSUER: gatewayAs.issuer,
    HOST: '127.0.0.1',
    PORT: String(port),
    MCP_AUTH_UPSTREAM: notes.url,
    MCP_AUTH_UPSTREAM_AUTH: 'connected',
    MCP_AUTH_TOKEN_STORE_SECRET: KEY,
    MCP_AUTH_LOGIN_CLIENT_ID: LOGIN.clientId,
    MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN.clientSecret,
    MCP_AUTH_TOKEN_STORE: join(dir, 'tokens'),
    ...extra,
  });
  const results = await runChecks(config);
  return { port, lines: results.filter((result) => result.check === 'connected accounts') };
}

describe('check: connected accounts', () => {
  it('reports the store, the sign-in with its redirect URI, and the upstream with its client; leaves nothing in the store', async () => {
    const { port, lines } = await connectedLines({ MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret });
    assert.deepEqual(
      lines.map((line) => [line.status, line.subject]),
      [
        ['ok', `token store ${join(dir, 'tokens')}`],
        ['ok', `sign-in at ${gatewayAs.issuer}`],
        ['ok', `upstream ${notes.url}`],
      ],
      JSON.stringify(lines, null, 1),
    );
    assert.match(lines[1]!.message, new RegExp(`redirect URI http://127\\.0\\.0\\.1:${port}/connect/callback \\(`));
    assert.match(lines[1]!.message, /the issuer's token endpoint accepts the login client gateway-login \(MCP_AUTH_LOGIN_CLIENT_ID\)/);
    // Each upstream's own redirect URI, not the sign-in's (mix-up defence).
    assert.match(lines[2]!.message, new RegExp(`at ${notesAs.issuer} .*the registered client gw-notes, which must have the redirect URI http://127\\.0\\.0\\.1:${port}/connect/callback/upstream$`));
    assert.deepEqual(readdirSync(join(dir, 'tokens')).filter((name) => !name.startsWith('.')), [], 'the probe was deleted');
  });

  it('without a registered client, names dynamic registration; a store it cannot use, and an unreachable sign-in, fail with a fix', async () => {
    const { lines } = await connectedLines({ MCP_AUTH_TOKEN_STORE: '/proc/mcp-oauth-guard-tokens', MCP_AUTH_LOGIN_ISSUER: gatewayAs.issuer });
    assert.equal(lines[0]!.status, 'fail', JSON.stringify(lines[0]));
    assert.ok(lines[0]!.fix?.includes('MCP_AUTH_TOKEN_STORE'));
    assert.equal(lines[2]!.status, 'ok');
    assert.match(lines[2]!.message, /a client it registers itself \(RFC 7591\), redirect URI http:\/\/127\.0\.0\.1:\d+\/connect\/callback\/upstream$/);
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const down = loadGatewayConfig({
      MCP_AUTH_ISSUER: unreachable,
      HOST: '127.0.0.1',
      PORT: '0',
      MCP_AUTH_UPSTREAM: notes.url,
      MCP_AUTH_UPSTREAM_AUTH: 'connected',
      MCP_AUTH_TOKEN_STORE_SECRET: KEY,
      MCP_AUTH_LOGIN_CLIENT_ID: 'gateway-login',
      MCP_AUTH_TOKEN_STORE: join(dir, 'tokens'),
      MCP_AUTH_HTTP_TIMEOUT_MS: '1000',
    });
    const signIn = (await runChecks(down)).find((line) => line.subject === `sign-in at ${unreachable}`);
    assert.equal(signIn?.status, 'fail', JSON.stringify(signIn));
    assert.ok(signIn?.fix?.includes('MCP_AUTH_LOGIN_ISSUER'));
  });

  it('a Redis token store that cannot be reached fails with a short reason: nothing of the client library on the line or the console', async () => {
    const written: string[] = [];
    const originalWarn = console.warn;
    const originalWrite = process.stderr.write;
    console.warn = (...args: unknown[]) => void written.push(args.join(' '));
    process.stderr.write = ((chunk: string | Uint8Array) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
    let lines;
    try {
      ({ lines } = await connectedLines({ MCP_AUTH_TOKEN_STORE: 'redis', MCP_AUTH_REDIS_URL: `redis://127.0.0.1:${await freePort()}`, MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret }));
    } finally {
      console.warn = originalWarn;
      process.stderr.write = originalWrite;
    }
    assert.equal(lines[0]!.subject, 'token store redis');
    assert.equal(lines[0]!.status, 'fail', JSON.stringify(lines[0]));
    assert.match(lines[0]!.message, /^the token store cannot be used: the token store is unavailable \(Redis: (connection refused|not connected)\)$/);
    assert.ok(lines[0]!.fix?.includes('MCP_AUTH_REDIS_URL'));
    assert.deepEqual(written, [], 'nothing written to the console');
  });

  it('fails a login client or a registered upstream client whose id or secret the token endpoint refuses, naming the settings', async () => {
    for (const login of [{ MCP_AUTH_LOGIN_CLIENT_ID: 'gw-login-typo' }, { MCP_AUTH_LOGIN_CLIENT_SECRET: 'not-the-secret' }] as Record<string, string>[]) {
      const { lines } = await connectedLines({ ...login, MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret });
      assert.equal(lines[1]!.status, 'fail', JSON.stringify(lines[1]));
      assert.match(lines[1]!.message, /^the issuer's token endpoint refuses the login client .* \(MCP_AUTH_LOGIN_CLIENT_ID\): invalid_client$/);
      assert.match(lines[1]!.fix ?? '', /MCP_AUTH_LOGIN_CLIENT_ID and MCP_AUTH_LOGIN_CLIENT_SECRET/);
      assert.doesNotMatch(JSON.stringify(lines), /not-the-secret|gateway-login-secret/, 'no secret printed');
      assert.equal(lines[2]!.status, 'ok', JSON.stringify(lines[2]));
    }
    for (const upstream of [{ MCP_AUTH_UPSTREAM_CLIENT_ID: 'gw-notes-typo', MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret }, { MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: 'not-the-secret' }]) {
      const { lines } = await connectedLines(upstream);
      assert.equal(lines[1]!.status, 'ok', JSON.stringify(lines[1]));
      assert.equal(lines[2]!.status, 'fail', JSON.stringify(lines[2]));
      assert.match(lines[2]!.message, /; its token endpoint refuses that client: invalid_client$/);
      assert.match(lines[2]!.fix ?? '', /MCP_AUTH_UPSTREAM_CLIENT_ID and MCP_AUTH_UPSTREAM_CLIENT_SECRET/);
      assert.doesNotMatch(JSON.stringify(lines), /not-the-secret|gw-notes-secret/, 'no secret printed');
    }
  });

  it('warns naming the configured scopes the authorization server does not list in scopes_supported', async () => {
    const { lines } = await connectedLines({ MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret, MCP_AUTH_UPSTREAM_SCOPE: 'notes:read notes:fly notes:swim' });
    assert.equal(lines[2]!.status, 'warn', JSON.stringify(lines[2]));
    assert.match(lines[2]!.message, /its scopes_supported does not list notes:fly, notes:swim, which MCP_AUTH_UPSTREAM_SCOPE asks for$/);
    assert.ok(lines[2]!.fix?.includes('MCP_AUTH_UPSTREAM_SCOPE'));
    const listed = await connectedLines({ MCP_AUTH_UPSTREAM_CLIENT_ID: NOTES_CLIENT.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: NOTES_CLIENT.clientSecret, MCP_AUTH_UPSTREAM_SCOPE: 'notes:read' });
    assert.equal(listed.lines[2]!.status, 'ok', JSON.stringify(listed.lines[2]));
  });

  it('names the client registration will really use: on an http gateway, dynamic registration even where metadata documents are accepted', async () => {
    const cimdAs = await startAuthorizationServer({ clientIdMetadataDocuments: true });
    try {
      const served = await startNotesServer({ issuer: cimdAs.issuer });
      try {
        cimdAs.addResource(served.url, { scopes: ['notes:read'] });
        const { lines } = await connectedLines({ MCP_AUTH_UPSTREAM: served.url });
        assert.equal(lines[2]!.status, 'ok', JSON.stringify(lines[2]));
        assert.match(lines[2]!.message, /a client it registers itself \(RFC 7591\)/);
        assert.doesNotMatch(lines[2]!.message, /metadata document/);
      } finally {
        await served.close();
      }
    } finally {
      await cimdAs.close();
    }
  });
});
