// The Express adapter's policy reload: router.guard.setPolicy(loadPolicyFile(...)) on a real app with real tokens.
// Calls, list filtering and the metadata follow at once; an invalid file is
// refused with the policy in force kept.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { ConfigurationError, dispatchTable } from '../../src/index.js';
import { loadPolicyFile } from '../../src/core/policy/load-policy-file.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp, send } from '../helpers/http-client.js';

const SCOPES = ['x:read', 'x:write', 'x:admin'];

describe('mcpOAuthGuard: reloading the policy', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;
  let token: string;
  let dir: string;

  before(async () => {
    as = await startAuthorizationServer();
    dir = mkdtempSync(join(tmpdir(), 'express-reload-'));
    writeFileSync(join(dir, 'v1.json'), JSON.stringify({ tools: { read: ['x:read'], write: ['x:admin'] } }));
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: loadPolicyFile(join(dir, 'v1.json')),
      handler: dispatchTable({
        'tools/list': () => ({ tools: [{ name: 'read', inputSchema: { type: 'object' } }, { name: 'write', inputSchema: { type: 'object' } }] }),
        'tools/call': (params) => ({ content: [{ type: 'text', text: `called ${String(params.name)}` }] }),
      }),
    }));
    as.addResource(app.url, { scopes: SCOPES });
    token = await as.issueAccessToken({ resource: app.url, scope: 'x:read x:write', sub: 'alice' });
  });
  after(async () => {
    await app?.close();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const listed = async (): Promise<string[]> => {
    const answer = await postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, token);
    assert.equal(answer.status, 200, answer.text);
    return (answer.json.result.tools as { name: string }[]).map((t) => t.name);
  };
  const call = async (name: string): Promise<number> => (await postMcp(app.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: {} } }, token)).status;
  const scopesSupported = async (): Promise<string[]> => (await send(`${new URL(app.url).origin}/.well-known/oauth-protected-resource/mcp`, { method: 'GET' })).json.scopes_supported;

  test('calls, lists and the metadata follow router.guard.setPolicy at once', async () => {
    assert.deepEqual(await listed(), ['read']);
    assert.deepEqual(await listed(), ['read']);
    assert.equal(await call('write'), 403);
    assert.deepEqual(await scopesSupported(), ['x:read', 'x:admin']);

    writeFileSync(join(dir, 'v2.json'), JSON.stringify({ tools: { read: ['x:admin'], write: ['x:write'] } }));
    app.router.guard.setPolicy(loadPolicyFile(join(dir, 'v2.json')));
    assert.deepEqual(await listed(), ['write']);
    assert.equal(await call('write'), 200);
    assert.equal(await call('read'), 403);
    assert.deepEqual(await scopesSupported(), ['x:admin', 'x:write']);
  });

  test('an invalid file is refused and the policy in force stays', async () => {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ tools: { write: 'x:read' } }));
    const inForce = app.router.guard.policy;
    assert.throws(() => app.router.guard.setPolicy(loadPolicyFile(join(dir, 'bad.json'))), ConfigurationError);
    assert.equal(app.router.guard.policy, inForce);
    assert.equal(await call('write'), 200);
  });
});
