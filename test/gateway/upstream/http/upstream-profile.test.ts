// The upstream's profile (its capabilities; never its instructions, which answered one user) read from its real answer to initialize over HTTP: JSON and
// event streams, the answer to this request only, and nothing kept past 64 KiB.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { MAX_UPSTREAM_PROFILE_BYTES, readUpstreamProfile } from '../../../../src/gateway/upstream/http/upstream-profile.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

describe('readUpstreamProfile', { timeout: 20_000 }, () => {
  /** What the server answers next: status, content type, body. */
  let next: { status: number; type: string; body: string } = { status: 200, type: 'application/json', body: '' };
  let origin = '';
  const server = createServer((_req, res) => res.writeHead(next.status, { 'content-type': next.type }).end(next.body));
  before(async () => {
    origin = await listenOnLoopback(server);
  });
  after(() => closeServer(server));

  const answer = (id: unknown, result: object): string => JSON.stringify({ jsonrpc: '2.0', id, result });
  async function read(status: number, type: string, body: string, id = 7) {
    next = { status, type, body };
    return readUpstreamProfile(await request(`${origin}/mcp`, { method: 'POST', signal: AbortSignal.timeout(5_000) }), id);
  }

  it('reads the capabilities and the revision, and not the instructions, from JSON and from an event stream', async () => {
    const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, instructions: 'Be brief.', serverInfo: { name: 'x', version: '1' } };
    assert.deepEqual(await read(200, 'application/json', answer(7, result)), { capabilities: { tools: {} }, protocolVersion: '2025-11-25' });
    const stream = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\nevent: message\ndata: ${answer(7, { capabilities: { prompts: {} } })}\n\n`;
    assert.deepEqual(await read(200, 'text/event-stream; charset=utf-8', stream), { capabilities: { prompts: {} } });
  });

  it('ignores another id, an error, a refusal, another media type and capabilities that are not an object', async () => {
    assert.equal(await read(200, 'application/json', answer(8, { capabilities: { tools: {} } })), undefined);
    assert.equal(await read(200, 'application/json', JSON.stringify({ jsonrpc: '2.0', id: 7, error: { code: -32600, message: 'no' } })), undefined);
    assert.equal(await read(500, 'application/json', answer(7, { capabilities: { tools: {} } })), undefined);
    assert.equal(await read(200, 'text/plain', answer(7, { capabilities: { tools: {} } })), undefined);
    assert.equal(await read(200, 'application/json', answer(7, { capabilities: ['tools'] })), undefined);
    assert.equal(await read(200, 'application/json', '{not json'), undefined);
  });

  it('stops at the first response event of a stream the upstream keeps open, and cancels the rest', { timeout: 10_000 }, async () => {
    let closed!: () => void;
    const streamClosed = new Promise<void>((resolve) => (closed = resolve));
    const open = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // The response event arrives split across two writes, then the stream stays open with nothing more to say.
      const event = `event: message\ndata: ${answer(7, { capabilities: { tools: {} } })}\n\n`;
      res.write(event.slice(0, 20));
      setTimeout(() => res.write(event.slice(20)), 20);
      res.on('close', closed);
    });
    const openOrigin = await listenOnLoopback(open);
    try {
      const started = performance.now();
      // The request's own time allowed is far longer than the test's: only stopping at the response ends the read.
      const profile = await readUpstreamProfile(await request(`${openOrigin}/mcp`, { method: 'POST', signal: AbortSignal.timeout(60_000) }), 7);
      assert.deepEqual(profile, { capabilities: { tools: {} } });
      assert.ok(performance.now() - started < 5_000, 'answered without waiting for the stream to end');
      await streamClosed;
    } finally {
      await closeServer(open);
    }
  });

  it('keeps a profile up to 64 KiB serialized and ignores a larger one', async () => {
    const padded = (n: number): { capabilities: Record<string, unknown> } => ({ capabilities: { tools: {}, experimental: { pad: 'x'.repeat(n) } } });
    assert.deepEqual(await read(200, 'application/json', answer(7, padded(MAX_UPSTREAM_PROFILE_BYTES - 100))), padded(MAX_UPSTREAM_PROFILE_BYTES - 100));
    assert.equal(await read(200, 'application/json', answer(7, padded(MAX_UPSTREAM_PROFILE_BYTES))), undefined);
    // Far larger: not read to its end.
    assert.equal(await read(200, 'application/json', answer(7, padded(4 * MAX_UPSTREAM_PROFILE_BYTES))), undefined);
  });
});
