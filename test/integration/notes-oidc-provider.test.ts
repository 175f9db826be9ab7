// The notes example behind the guard, against a real oidc-provider issuing RFC 8707 JWT access tokens.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { postMcp, send } from '../helpers/http-client.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop/dpop-proof.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

describe('notes server behind mcpOAuthGuard with oidc-provider', () => {
  let as: AuthorizationServer;
  let notes: RunningNotesServer;
  let otherResource: string;
  let metadataUrl: string;

  before(async () => {
    as = await startAuthorizationServer();
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: NOTES_SCOPES });
    otherResource = `${new URL(notes.url).origin}/other-mcp`;
    as.addResource(otherResource, { scopes: NOTES_SCOPES });
    metadataUrl = `${new URL(notes.url).origin}/.well-known/oauth-protected-resource/mcp`;
    await notes.router.guard.ready();
  });
  after(async () => {
    await notes?.close();
    await as?.close();
  });

  const token = (scope: string, sub = 'alice', extra: { expiresIn?: number; resource?: string } = {}) =>
    as.issueAccessToken({ resource: extra.resource ?? notes.url, scope, sub, expiresIn: extra.expiresIn });
  const toolsList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const call = (name: string, args: Record<string, unknown> = {}, id: number | string = 2) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args },
  });

  test('serves RFC 9728 metadata at the path-suffixed and root well-known URIs', async () => {
    for (const url of [metadataUrl, `${new URL(notes.url).origin}/.well-known/oauth-protected-resource`]) {
      const res = await send(url, { method: 'GET' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, {
        resource: notes.url,
        authorization_servers: [as.issuer],
        scopes_supported: NOTES_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'Notes (mcp-oauth-guard example)',
        dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGORITHMS],
      });
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal(res.headers['cache-control'], 'public, max-age=3600');
    }
  });

  test('answers a metadata preflight allowing MCP-Protocol-Version', async () => {
    const res = await send(metadataUrl, {
      method: 'OPTIONS',
      headers: { origin: 'https://client.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' },
    });
    assert.equal(res.status, 204);
    assert.match(String(res.headers['access-control-allow-headers']), /MCP-Protocol-Version/);
    assert.equal(res.headers['access-control-allow-origin'], '*');
  });

  test('an endpoint preflight lets a browser client send its DPoP proof, as the challenges offer DPoP', async () => {
    const res = await send(notes.url, {
      method: 'OPTIONS',
      headers: { origin: new URL(notes.url).origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, dpop, content-type' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-headers'], 'Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID, DPoP');
  });

  test("headers over Node's limit get 431 with a JSON-RPC error body, not a bare status", async () => {
    const socket = connect(Number(new URL(notes.url).port), '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    await once(socket, 'close');
    const [head = '', body = ''] = Buffer.concat(received).toString('utf8').split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 431 /);
    assert.equal(JSON.parse(body).error.code, -32600);
  });

  test('a request without a token gets 401 with a bare challenge naming the metadata and notes:read', async () => {
    const res = await postMcp(notes.url, toolsList);
    assert.equal(res.status, 401);
    assert.equal(
      res.headers['www-authenticate'],
      `Bearer scope="notes:read", resource_metadata="${metadataUrl}", DPoP algs="${DPOP_SIGNING_ALGORITHMS.join(' ')}", scope="notes:read", resource_metadata="${metadataUrl}"`,
    );
    assert.equal(res.json.id, 1);
    assert.equal(res.json.error.code, -31401);
  });

  test('a real token only in the query: the same bare 401, a message saying it is never read, the token nowhere', async () => {
    const queryToken = await token('notes:read');
    const res = await postMcp(`${notes.url}?access_token=${queryToken}`, toolsList);
    assert.equal(res.status, 401);
    assert.equal(
      res.headers['www-authenticate'],
      `Bearer scope="notes:read", resource_metadata="${metadataUrl}", DPoP algs="${DPOP_SIGNING_ALGORITHMS.join(' ')}", scope="notes:read", resource_metadata="${metadataUrl}"`,
    );
    assert.deepEqual(res.json, {
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -31401,
        message: 'An access_token in the query string is never read (RFC 6750 section 2.3, MCP authorization). Authorization required: send an OAuth 2.1 access token as "Authorization: Bearer <token>"',
      },
    });
    assert.ok(!res.text.includes(queryToken) && !JSON.stringify(res.headers).includes(queryToken));
  });

  test('a valid read token sees whoami and notes_list only', async () => {
    const res = await postMcp(notes.url, toolsList, await token('notes:read'));
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(
      res.json.result.tools.map((t: { name: string }) => t.name),
      ['whoami', 'notes_list'],
    );
  });

  test('the scope hierarchy lets an admin token see every tool', async () => {
    const res = await postMcp(notes.url, toolsList, await token('notes:admin'));
    assert.deepEqual(
      res.json.result.tools.map((t: { name: string }) => t.name),
      ['whoami', 'notes_list', 'notes_add', 'notes_clear'],
    );
  });

  test('whoami returns the subject, client and scopes of the token', async () => {
    const res = await postMcp(notes.url, call('whoami'), await token('notes:read', 'bob'));
    assert.equal(res.status, 200);
    const who = JSON.parse(res.json.result.content[0].text);
    assert.equal(who.subject, 'bob');
    assert.deepEqual(who.scopes, ['notes:read']);
    assert.equal(typeof who.client, 'string');
    assert.notEqual(who.client, '');
  });

  test('notes_add with a read token gets 403 insufficient_scope naming notes:write and the granted scope', async () => {
    const res = await postMcp(notes.url, call('notes_add', { text: 'hi' }, 7), await token('notes:read'));
    assert.equal(res.status, 403);
    const header = String(res.headers['www-authenticate']);
    assert.match(header, /^Bearer error="insufficient_scope", error_description="[^"]+", scope="notes:write notes:read", resource_metadata="/);
    assert.ok(header.endsWith(`resource_metadata="${metadataUrl}"`));
    assert.equal(res.json.id, 7);
    assert.equal(res.json.error.code, -31403);
    assert.equal(res.json.error.data.error, 'insufficient_scope');
  });

  test('after step-up, notes_add and notes_list succeed, per user', async () => {
    const writer = await token('notes:read notes:write', 'carol');
    const added = await postMcp(notes.url, call('notes_add', { text: 'buy milk' }), writer);
    assert.equal(added.status, 200);
    assert.equal(added.json.result.content[0].text, 'added note #1');
    const listed = await postMcp(notes.url, call('notes_list'), writer);
    assert.equal(listed.json.result.content[0].text, '1. buy milk');
    const someoneElse = await postMcp(notes.url, call('notes_list'), await token('notes:read', 'dave'));
    assert.equal(someoneElse.json.result.content[0].text, '(no notes yet)');
  });

  test('a tool argument error is a result with isError, not a protocol error', async () => {
    const res = await postMcp(notes.url, call('notes_add', { text: 42 }), await token('notes:write'));
    assert.equal(res.status, 200);
    assert.equal(res.json.result.isError, true);
    assert.equal(res.json.error, undefined);
  });

  test('a token the same authorization server issued for another resource is rejected', async () => {
    const res = await postMcp(notes.url, toolsList, await token('notes:read', 'alice', { resource: otherResource }));
    assert.equal(res.status, 401);
    assert.match(String(res.headers['www-authenticate']), /^Bearer error="invalid_token", error_description="[^"]+", scope="notes:read", resource_metadata="/);
    assert.equal(res.json.error.code, -31401);
  });

  test('an expired token is rejected with invalid_token', async () => {
    const res = await postMcp(notes.url, toolsList, await token('notes:read', 'alice', { expiresIn: -60 }));
    assert.equal(res.status, 401);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
    assert.match(String(res.headers['www-authenticate']), /error_description="[^"]*expired[^"]*"/i);
  });

  test('initialize works with any valid token (no base scope is configured)', async () => {
    const res = await postMcp(
      notes.url,
      { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      await token('notes:read'),
    );
    assert.equal(res.status, 200);
    assert.equal(res.json.result.protocolVersion, '2025-06-18');
  });

  test('a stateless 2026-07-28 client: server/discover, filtered tools/list, step-up, all through the guard', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const headers = (method: string, name?: string) => ({
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    });
    const reader = await token('notes:read', 'erin');
    const discover = await postMcp(notes.url, { jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: meta } }, reader, headers('server/discover'));
    assert.equal(discover.status, 200);
    assert.equal(discover.json.result.resultType, 'complete');
    assert.deepEqual(discover.json.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
    const list = await postMcp(notes.url, { jsonrpc: '2.0', id: 'l', method: 'tools/list', params: { _meta: meta } }, reader, headers('tools/list'));
    assert.equal(list.json.result.resultType, 'complete');
    assert.equal(list.json.result.cacheScope, 'private');
    assert.deepEqual(list.json.result.tools.map((t: { name: string }) => t.name), ['whoami', 'notes_list']);
    const add = { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'notes_add', arguments: { text: 'x' }, _meta: meta } };
    const denied = await postMcp(notes.url, add, reader, headers('tools/call', 'notes_add'));
    assert.equal(denied.status, 403);
    const ok = await postMcp(notes.url, add, await token('notes:write', 'erin'), headers('tools/call', 'notes_add'));
    assert.equal(ok.status, 200);
    assert.equal(ok.json.result.resultType, 'complete');
    const unknown = await postMcp(notes.url, { jsonrpc: '2.0', id: 'u', method: 'nope/nope', params: { _meta: meta } }, reader, headers('nope/nope'));
    assert.equal(unknown.status, 404);
  });
});
