// The example PKCE client with a pre-registered public client (`clientId`) instead of RFC 7591 dynamic
// registration, headless against the notes server and the demo authorization server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_SCOPES, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { McpOAuthClient } from '../../examples/demo/mcp-oauth-client.js';
import type { TranscriptEvent } from '../../examples/demo/transcript.js';

let as: AuthorizationServer;
let notes: RunningNotesServer;
let clientId: string;
let registrations = 0;
const registrationPosts: string[] = [];

before(async () => {
  as = await startAuthorizationServer();
  notes = await startNotesServer({ issuer: as.issuer });
  as.addResource(notes.url, { scopes: DEMO_SCOPES });
  // Registered ahead of time, as an operator would: a public native client with a loopback redirect
  // (RFC 8252 §7.3: any port at run time).
  const response = await fetch(`${as.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'pre-registered notes client',
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  });
  assert.equal(response.status, 201);
  clientId = ((await response.json()) as { client_id: string }).client_id;
  // Every registration from here on is the client's doing.
  as.provider.on('registration_create.success', (...args: unknown[]) => {
    const ctx = args[0] as { method?: string; path?: string };
    registrations++;
    registrationPosts.push(`${ctx.method} ${ctx.path}`);
  });
});
after(async () => {
  await notes?.close();
  await as?.close();
});

describe('McpOAuthClient with a pre-registered client id', () => {
  test('connects and lists tools without registering, and the token is issued to that client', async () => {
    const events: TranscriptEvent[] = [];
    const client = new McpOAuthClient({ mcpUrl: notes.url, mode: 'headless', clientId, onEvent: (e) => events.push(e) });
    await client.connect();
    const tools = await client.listTools();

    // The challenge asks for notes:read: the tools a reader may call, filtered by the guard.
    assert.deepEqual(tools.map((t) => t.name).sort(), ['notes_list', 'whoami']);
    assert.equal(client.clientId, clientId);
    assert.equal(client.accessTokenClaims?.client_id, clientId);
    assert.equal(client.accessTokenClaims?.aud, notes.url);
    assert.equal(client.grantedScope?.split(' ').includes('notes:read'), true);

    assert.equal(registrations, 0, `registrations made: ${registrationPosts.join(', ')}`);
    const registrationEvents = events.filter((e) => e.step === 'registration');
    assert.equal(registrationEvents.length, 1);
    assert.equal(registrationEvents[0]!.message, `using client id ${clientId} (pre-registered)`);
    assert.equal(events.some((e) => e.step === 'registration' && e.message.startsWith('registered client')), false);
    // The authorization request names the configured client.
    const authorization = events.find((e) => e.step === 'authorization-url');
    assert.equal(new URL(String(authorization?.data?.url)).searchParams.get('client_id'), clientId);
    assert.ok(events.some((e) => e.step === 'token'));
    await client.close();
  });

  test('control: without clientId the same client registers once', async () => {
    const events: TranscriptEvent[] = [];
    const client = new McpOAuthClient({ mcpUrl: notes.url, mode: 'headless', onEvent: (e) => events.push(e) });
    await client.connect();
    assert.equal(registrations, 1);
    assert.notEqual(client.clientId, clientId);
    assert.equal(client.accessTokenClaims?.client_id, client.clientId);
    assert.ok(events.some((e) => e.step === 'registration' && e.message === `registered client ${client.clientId}`));
    await client.close();
  });
});
