// `lists: "all"` against `lists: "filtered"` in the middleware: the same mode for a handler that writes its own
// answer (JSON and SSE), a function handler, and both SDK adapters. With "all" every list is shown and passed on as
// written, and a call the token cannot make still gets the 403 that starts the step-up.
import { JsonRpcErrorCode } from '../../src/core/wire/jsonrpc.js';
import assert from 'node:assert/strict';
import { request, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer } from '../../examples/notes-server.js';
import { startSdkNotesServer } from '../../examples/sdk-server.js';
import { startSdk2NotesServer } from '../../examples/sdk2-server.js';
import type { ListsMode } from '../../src/core/policy/lists-mode.js';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { httpHandler, mcpOAuthGuard, type GuardedRequest } from '../../src/index.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { messages, send, type HttpAnswer } from '../helpers/http-client.js';

const PROTOCOL = '2025-11-25';
const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const ALL_NOTES_TOOLS = ['whoami', 'notes_list', 'notes_add', 'notes_clear'];

let as: AuthorizationServer;
before(async () => {
  as = await startAuthorizationServer();
});
after(async () => {
  await as?.close();
});

function post(url: string, accessToken: string, body: unknown, extra: Record<string, string> = {}): Promise<HttpAnswer> {
  return send(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL, ...extra },
    body: JSON.stringify(body),
  });
}

const answerTo = (answer: HttpAnswer, id: number): any => messages(answer).find((m) => m.id === id);
const toolNames = (answer: HttpAnswer, id: number): string[] => answerTo(answer, id).result.tools.map((t: { name: string }) => t.name);
const call = (name: string, id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: name === 'notes_add' ? { text: 'hi' } : {} } });

/** The step-up refusal: 403, `insufficient_scope`, and the scope the call needs in the challenge. */
function assertStepUp(answer: HttpAnswer, scope: string): void {
  assert.equal(answer.status, 403, answer.text);
  const challenge = String(answer.headers['www-authenticate']);
  assert.match(challenge, /^Bearer .*error="insufficient_scope"/);
  // The body: a JSON-RPC error of the MCP authorization range, saying the same.
  const body = JSON.parse(answer.text) as { jsonrpc?: string; error?: { code?: number; data?: { error?: string } } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(body.error?.code, JsonRpcErrorCode.Forbidden);
  assert.equal(body.error?.data?.error, 'insufficient_scope');
  assert.match(challenge, new RegExp(`scope="[^"]*${scope}`));
}

// The three ways an application serves MCP behind the middleware, each with the notes example's policy.
const SERVERS = [
  { name: 'function handler', start: (lists: ListsMode) => startNotesServer({ issuer: as.issuer, lists }) },
  { name: 'SDK 1.x adapter', start: (lists: ListsMode) => startSdkNotesServer({ issuer: as.issuer, lists }) },
  { name: 'SDK 2.x adapter', start: (lists: ListsMode) => startSdk2NotesServer({ issuer: as.issuer, lists }) },
];

for (const { name, start } of SERVERS) {
  for (const lists of ['filtered', 'all'] as const) {
    describe(`${name}, lists: ${lists}`, () => {
      let server: Awaited<ReturnType<typeof start>>;
      before(async () => {
        server = await start(lists);
        as.addResource(server.url, { scopes: NOTES_SCOPES });
      });
      after(async () => {
        await server?.close();
      });

      test(lists === 'all' ? 'a read-only token sees every tool, is refused the write with a step-up 403, and a token with the scope makes it' : 'a read-only token sees only what it may call', async () => {
        const readToken = await as.issueAccessToken({ resource: server.url, scope: 'notes:read', sub: 'alice' });
        const listed = await post(server.url, readToken, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
        assert.equal(listed.status, 200, listed.text);
        const names = toolNames(listed, 1);
        if (lists === 'filtered') {
          assert.deepEqual(names, ['whoami', 'notes_list']);
        } else {
          for (const tool of ALL_NOTES_TOOLS) assert.ok(names.includes(tool), `${tool} in ${names.join(', ')}`);
        }
        // Enforced on call in both modes.
        assertStepUp(await post(server.url, readToken, call('notes_add', 2)), 'notes:write');
        const writeToken = await as.issueAccessToken({ resource: server.url, scope: 'notes:read notes:write', sub: 'alice' });
        const added = await post(server.url, writeToken, call('notes_add', 3));
        assert.equal(added.status, 200, added.text);
        assert.equal(answerTo(added, 3).result.isError, undefined);
      });
    });
  }
}

describe('a handler writing its own answer', () => {
  // Written with spacing of its own and an ETag: what is passed on untouched keeps both, what is rewritten loses them.
  const LIST_TEXT = (id: number) => `{ "jsonrpc": "2.0", "id": ${id}, "result": { "tools": [ { "name": "open" }, { "name": "secret" } ] } }`;
  const PUBLIC_READ = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, result: { contents: [{ uri: 'admin://config', text: 'x' }], cacheScope: 'public' } });

  // `x-answer: slow`: the list is written in two chunks, the second once the test says so.
  let writeRest: (() => void) | undefined;
  function inner(req: GuardedRequest, res: ServerResponse): void {
    const message = req.body as unknown as { id: number; method: string };
    if (req.headers['x-answer'] === 'slow') {
      const text = LIST_TEXT(message.id);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(text.slice(0, 20));
      writeRest = () => res.end(text.slice(20));
      return;
    }
    // `x-answer: read` answers any request with a public read (an upstream that moved an id to the newest request).
    const text = message.method === 'resources/read' || req.headers['x-answer'] === 'read' ? PUBLIC_READ(message.id) : LIST_TEXT(message.id);
    if (req.headers['x-answer'] === 'sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`event: message\ndata: ${text}\n\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), etag: '"v1"' });
    res.end(text);
  }

  const apps = new Map<ListsMode, GuardedApp>();
  let baseToken: (lists: ListsMode) => Promise<string>;
  before(async () => {
    for (const lists of ['filtered', 'all'] as const) {
      const app = await startGuardedApp((origin) => ({
        issuer: as.issuer,
        resource: `${origin}/mcp`,
        lists,
        policy: { scopesSupported: ['x:admin'], tools: { secret: ['x:admin'] }, resources: { 'admin://config': ['x:admin'], '*': [] } },
        handler: httpHandler(inner, { supportsGet: false, supportsDelete: false }),
      }));
      as.addResource(app.url, { scopes: ['x:admin'] });
      apps.set(lists, app);
    }
    baseToken = (lists) => as.issueAccessToken({ resource: apps.get(lists)!.url, scope: '', sub: 'u' });
  });
  after(async () => {
    for (const app of apps.values()) await app.close();
  });

  test('lists: all passes a JSON list answer on byte for byte, head and all; filtered rewrites it', async () => {
    const all = apps.get('all')!;
    const answer = await post(all.url, await baseToken('all'), { jsonrpc: '2.0', id: 7, method: 'tools/list' });
    assert.equal(answer.status, 200);
    assert.equal(answer.text, LIST_TEXT(7));
    assert.equal(answer.headers.etag, '"v1"');
    assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(LIST_TEXT(7)));
    assertStepUp(await post(all.url, await baseToken('all'), { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'secret', arguments: {} } }), 'x:admin');

    const filtered = apps.get('filtered')!;
    const rewritten = await post(filtered.url, await baseToken('filtered'), { jsonrpc: '2.0', id: 7, method: 'tools/list' });
    assert.deepEqual(toolNames(rewritten, 7), ['open']);
    assert.equal(rewritten.headers.etag, undefined);
  });

  /** The first bytes of a list answer written in two chunks, and whether they came before the second was written. */
  function firstBytes(url: string, accessToken: string): Promise<{ first: string; early: boolean; whole: string }> {
    return new Promise((resolve, reject) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' });
      // Nothing within 300 ms: the answer is held whole, so the test lets the handler finish.
      let rested = false;
      const finish = (): void => {
        if (rested) return;
        rested = true;
        writeRest?.();
      };
      const timer = setTimeout(finish, 300);
      const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL, 'x-answer': 'slow' } }, (res) => {
        let first: string | undefined;
        let early = false;
        let whole = '';
        res.on('data', (chunk: Buffer) => {
          if (first === undefined) {
            first = chunk.toString();
            // Delivered before the handler wrote the rest: the answer was passed on as it came.
            early = !rested;
            clearTimeout(timer);
            finish();
          }
          whole += chunk.toString();
        });
        res.on('end', () => resolve({ first: first ?? '', early, whole }));
        res.on('error', reject);
      });
      req.on('error', reject);
      writeRest = undefined;
      req.end(body);
    });
  }

  test('lists: all passes a list answer on as it comes, never holding it; filtered holds it whole', async () => {
    const passed = await firstBytes(apps.get('all')!.url, await baseToken('all'));
    assert.equal(passed.whole, LIST_TEXT(5));
    assert.equal(passed.early, true, 'the first chunk arrived before the handler wrote the rest');
    assert.equal(passed.first, LIST_TEXT(5).slice(0, 20));
    const held = await firstBytes(apps.get('filtered')!.url, await baseToken('filtered'));
    assert.equal(held.early, false, 'nothing arrived before the handler ended the answer');
    assert.deepEqual(JSON.parse(held.whole).result.tools, [{ name: 'open' }]);
  });

  test('lists: all passes an event-stream list answer on as written', async () => {
    const answer = await post(apps.get('all')!.url, await baseToken('all'), { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'x-answer': 'sse' });
    assert.equal(answer.text, `event: message\ndata: ${LIST_TEXT(9)}\n\n`);
    const filtered = await post(apps.get('filtered')!.url, await baseToken('filtered'), { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'x-answer': 'sse' });
    assert.deepEqual(toolNames(filtered, 9), ['open']);
  });

  test('lists: all still keeps a restricted read out of shared caches, on its own exchange and on a list\'s', async () => {
    const all = apps.get('all')!;
    const adminToken = await as.issueAccessToken({ resource: all.url, scope: 'x:admin', sub: 'root' });
    const read = await post(all.url, adminToken, { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'admin://config' } });
    assert.equal(answerTo(read, 3).result.cacheScope, 'private');
    const onList = await post(all.url, adminToken, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, { 'x-answer': 'read' });
    assert.equal(answerTo(onList, 4).result.cacheScope, 'private');
  });
});

test('an invalid lists value fails at start-up, in the one message that names every bad option', () => {
  assert.throws(
    () => mcpOAuthGuard({ issuer: 'https://as.example.com', resource: 'https://mcp.example.com/mcp', lists: 'everything' as ListsMode, maxBodyBytes: -1, handler: () => undefined }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigurationError);
      assert.match(error.message, /options\.lists: must be one of filtered, all \(got "everything"\)/);
      assert.match(error.message, /options\.maxBodyBytes/);
      return true;
    },
  );
});
