// The SDK client example against a server the authorization server was not started for: the OAuth error it
// meets (invalid_target) is shown with its error_description, the resource it asked for and what to check.
import assert from 'node:assert/strict';
import { spawn } from '../helpers/child-process.js';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dispatchTable } from '../../src/index.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';

const CLIENT = fileURLToPath(new URL('../../examples/sdk-client.ts', import.meta.url));

describe('examples/sdk-client.ts, refused by the authorization server', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;

  before(async () => {
    // Started for another resource only: the app's URL is not one it issues tokens for.
    as = await startAuthorizationServer({ resources: { 'http://127.0.0.1:9/elsewhere': { scopes: ['x:read'] } } });
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: { scopesSupported: ['x:read'], tools: { '*': ['x:read'] } },
      handler: dispatchTable({ ping: () => ({}) }),
    }));
  });
  after(async () => {
    await app?.close();
    await as?.close();
  });

  it('prints the error, its error_description, the resource asked for and the hint; exits 1', { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLIENT, app.url, '--user', 'demo:demo-password'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    assert.equal(code, 1, stdout + stderr);
    const line = stderr.trim().split('\n').at(-1) ?? '';
    assert.match(line, /^client: the authorization server refused: invalid_target: \S.*, asked for the resource /, stderr);
    assert.ok(line.includes(`asked for the resource ${app.url} (is \`npm run auth-server\` running there, and was it started with this --resource?)`), line);
  });
});
