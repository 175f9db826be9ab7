// The refusal of an `initialize` whose session the gateway cannot keep (a server set's, a connected upstream's before
// the user connects), as a client reads it over HTTP: exact status, headers and JSON-RPC error, no challenge.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { JsonRpcErrorCode } from '../../../src/core/wire/jsonrpc.js';
import { writeSessionOpenRefusal, type SessionOpenRefusalReason } from '../../../src/gateway/upstream/session-open-refusal.js';
import { closeServer, listenOnLoopback } from '../../helpers/loopback-server.js';

describe('the refusal of a session the gateway cannot keep', () => {
  let server: Server;
  let url: string;
  before(async () => {
    server = createServer((req, res) => writeSessionOpenRefusal(res, 7, new URL(req.url ?? '/', 'http://x').searchParams.get('why') as SessionOpenRefusalReason));
    url = await listenOnLoopback(server);
  });
  after(() => closeServer(server));

  it('busy: 429 with Retry-After 1 and RateLimited, for the request id, and no challenge', async () => {
    const answer = await fetch(`${url}/?why=busy`, { method: 'POST' });
    assert.equal(answer.status, 429);
    assert.equal(answer.headers.get('retry-after'), '1');
    assert.equal(answer.headers.get('www-authenticate'), null);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await answer.json()) as { jsonrpc: string; id: number; error: { code: number; message: string } };
    assert.deepEqual({ jsonrpc: body.jsonrpc, id: body.id, code: body.error.code }, { jsonrpc: '2.0', id: 7, code: JsonRpcErrorCode.RateLimited });
    assert.match(body.error.message, /Too many sessions/);
  });

  it('no_identity: 403 Forbidden, for the request id, and no challenge (a new token with a subject is the fix, not a scope)', async () => {
    const answer = await fetch(`${url}/?why=no_identity`, { method: 'POST' });
    assert.equal(answer.status, 403);
    assert.equal(answer.headers.get('www-authenticate'), null);
    assert.equal(answer.headers.get('retry-after'), null);
    const body = (await answer.json()) as { id: number; error: { code: number; message: string } };
    assert.deepEqual({ id: body.id, code: body.error.code }, { id: 7, code: JsonRpcErrorCode.Forbidden });
    assert.match(body.error.message, /subject or a client/);
  });
});
