// The request log's paths: a connect link's ticket id and a callback's code and state never reach a logged line.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createRequestLog } from '../../src/http/request-log.js';

describe('request log paths', { timeout: 10_000 }, () => {
  const lines: string[] = [];
  const log = createRequestLog({ write: (line) => lines.push(line) });
  const server = createServer((req, res) => log.middleware(req, res, () => void res.writeHead(204).end()));
  let origin = '';

  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** The logged line of one GET of `path`. */
  async function loggedLine(path: string): Promise<string> {
    const before = lines.length;
    const answer = await fetch(`${origin}${path}`, { signal: AbortSignal.timeout(5_000) });
    assert.equal(answer.status, 204);
    for (let i = 0; i < 50 && lines.length === before; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(lines.length, before + 1, 'one line per request');
    return lines.at(-1)!;
  }

  it('logs a connect link as /connect/{ticket}, an upstream callback as /connect/callback/{server}, a callback without its query, other paths as they are', async () => {
    const ticketId = randomBytes(32).toString('base64url');
    const link = await loggedLine(`/connect/${ticketId}`);
    assert.equal(JSON.parse(link).path, '/connect/{ticket}');
    assert.ok(!link.includes(ticketId), 'the ticket id is not in the line');
    const code = randomBytes(16).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const callback = await loggedLine(`/connect/callback?code=${code}&state=${state}&iss=x`);
    assert.equal(JSON.parse(callback).path, '/connect/callback');
    assert.ok(!callback.includes(code) && !callback.includes(state), 'neither code nor state is in the line');
    assert.equal(JSON.parse(await loggedLine('/connect/client-metadata/notes.json')).path, '/connect/client-metadata/notes.json');
    assert.equal(JSON.parse(await loggedLine('/connect/not-a-ticket/x')).path, '/connect/{ticket}');
    // An upstream's callback is no link: logged as its own template, without its query.
    const upstream = await loggedLine(`/connect/callback/notes?code=${code}&state=${state}`);
    assert.equal(JSON.parse(upstream).path, '/connect/callback/{server}');
    assert.ok(!upstream.includes(code) && !upstream.includes(state), 'neither code nor state is in the line');
    assert.equal(JSON.parse(await loggedLine('/connect/callback/upstream')).path, '/connect/callback/{server}');
    assert.equal(JSON.parse(await loggedLine('/mcp?x=1')).path, '/mcp');
  });
});
