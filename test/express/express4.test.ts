// The library on Express 4 (the peer range is ^4.18 || ^5; development uses Express 5). A child process
// runs test/helpers/express4-app.ts with a loader that resolves `express` to the `express4` package
// (Express 4 under an alias), so the library's own `import { Router } from 'express'` gets Express 4 too.
// The child serves the notes example behind mcpOAuthGuard with a real oidc-provider authorization server;
// this test talks to it over HTTP.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from '../helpers/child-process.js';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { postMcp, send } from '../helpers/http-client.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop/dpop-proof.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const START_TIMEOUT_MS = 15_000;

interface Express4App {
  url: string;
  issuer: string;
  expressVersion: string;
  expressEntry: string;
  maxBodyBytes: number;
  readToken: string;
  writeToken: string;
}

/** Starts the child and resolves with its JSON line; rejects if it exits or stays silent too long. */
function startExpress4App(): { child: ChildProcess; ready: Promise<Express4App> } {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The child is a plain program, not a test file reporting to this runner.
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(
    process.execPath,
    ['--import', './test/helpers/express4-alias.mjs', '--import', 'tsx', 'test/helpers/express4-app.ts'],
    { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const ready = new Promise<Express4App>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the Express 4 app printed nothing within ${START_TIMEOUT_MS} ms\nstderr: ${stderr}`));
      child.kill('SIGKILL');
    }, START_TIMEOUT_MS);
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      const newline = stdout.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      try {
        resolve(JSON.parse(stdout.slice(0, newline)) as Express4App);
      } catch (error) {
        reject(new Error(`the Express 4 app printed no JSON line: ${stdout}\nstderr: ${stderr}`, { cause: error }));
      }
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the Express 4 app exited (code ${code}, signal ${signal}) before it was ready\nstderr: ${stderr}`));
    });
  });
  return { child, ready };
}

describe('mcpOAuthGuard on Express 4, with oidc-provider', () => {
  let child: ChildProcess | undefined;
  let app: Express4App;
  let metadataUrl: string;
  let rootMetadataUrl: string;

  before(async () => {
    const started = startExpress4App();
    child = started.child;
    app = await started.ready;
    const origin = new URL(app.url).origin;
    metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
    rootMetadataUrl = `${origin}/.well-known/oauth-protected-resource`;
  });

  after(async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.stdin!.end();
    child.kill('SIGTERM');
    // A safety bound only: the child exits on its own as soon as it sees SIGTERM or its stdin close.
    const bound = setTimeout(() => child!.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(bound);
  });

  const toolsList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const call = (name: string, args: Record<string, unknown>, id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  test('the child really runs Express 4, resolved through the alias', () => {
    assert.match(app.expressVersion, /^4\./);
    const [major, minor] = app.expressVersion.split('.').map(Number);
    assert.ok(major === 4 && minor! >= 18, `Express ${app.expressVersion} is below the supported 4.18`);
    assert.match(app.expressEntry, /\/node_modules\/express4\//);
  });

  test('serves RFC 9728 metadata at the path-suffixed and root well-known URIs', async () => {
    for (const url of [metadataUrl, rootMetadataUrl]) {
      const res = await send(url, { method: 'GET' });
      assert.equal(res.status, 200, url);
      assert.equal(res.json.resource, app.url);
      assert.deepEqual(res.json.authorization_servers, [app.issuer]);
      assert.deepEqual(res.json.scopes_supported, NOTES_SCOPES);
      assert.equal(res.headers['access-control-allow-origin'], '*');
    }
  });

  test('a request without a token gets 401 with the exact bare challenge', async () => {
    const res = await postMcp(app.url, toolsList);
    assert.equal(res.status, 401);
    assert.equal(
      res.headers['www-authenticate'],
      `Bearer scope="notes:read", resource_metadata="${metadataUrl}", DPoP algs="${DPOP_SIGNING_ALGORITHMS.join(' ')}", scope="notes:read", resource_metadata="${metadataUrl}"`,
    );
    assert.equal(res.json.id, 1);
    assert.equal(res.json.error.code, -31401);
  });

  test('a read token sees whoami and notes_list only', async () => {
    const res = await postMcp(app.url, toolsList, app.readToken);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json.result.tools.map((t: { name: string }) => t.name),
      ['whoami', 'notes_list'],
    );
  });

  test('notes_add with a read token gets 403 insufficient_scope asking for notes:write', async () => {
    const res = await postMcp(app.url, call('notes_add', { text: 'hi' }, 7), app.readToken);
    assert.equal(res.status, 403);
    const header = String(res.headers['www-authenticate']);
    assert.match(header, /^Bearer error="insufficient_scope", error_description="[^"]+", scope="notes:write notes:read", resource_metadata="/);
    assert.ok(header.endsWith(`resource_metadata="${metadataUrl}"`), header);
    assert.equal(res.json.id, 7);
    assert.equal(res.json.error.code, -31403);
  });

  test('notes_add with a write token succeeds, and the note is listed', async () => {
    const added = await postMcp(app.url, call('notes_add', { text: 'on express 4' }, 8), app.writeToken);
    assert.equal(added.status, 200);
    assert.equal(added.json.id, 8);
    assert.equal(added.json.result.content[0].text, 'added note #1');
    const listed = await postMcp(app.url, call('notes_list', {}, 9), app.readToken);
    assert.equal(listed.status, 200);
    assert.equal(listed.json.result.content[0].text, '1. on express 4');
  });

  test('a body over the limit gets 413', async () => {
    const big = JSON.stringify({ ...toolsList, params: { pad: 'x'.repeat(app.maxBodyBytes) } });
    assert.ok(Buffer.byteLength(big) > app.maxBodyBytes);
    const res = await postMcp(app.url, big, app.readToken);
    assert.equal(res.status, 413);
    assert.equal(res.json.error.code, -32600);
  });

  test('invalid JSON gets 400 with a -32700 parse error', async () => {
    const res = await postMcp(app.url, '{"jsonrpc": "2.0", "id": 1,', app.readToken);
    assert.equal(res.status, 400);
    assert.equal(res.json.id, null);
    assert.equal(res.json.error.code, -32700);
  });

  test('GET on the endpoint of a function handler gets 405 with Allow', async () => {
    const res = await send(app.url, { method: 'GET', headers: { authorization: `Bearer ${app.readToken}`, accept: 'text/event-stream' } });
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'POST, OPTIONS');
  });
});
