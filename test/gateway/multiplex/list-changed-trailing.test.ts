// Several servers behind one gateway endpoint: a `list_changed` from any of them reaches the client, on the merged
// GET stream and on a 2026-07-28 `subscriptions/listen` stream. Those of one kind within a short window are
// collapsed, and one held back is followed by one more when the window ends, so a server that changes while the
// client is already listing again is never left out of the client's list; nothing is written once the stream ended.
// A listen stream carries only what the caller asked for and may see, whatever the servers send.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, ServerResponse, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import { LIST_CHANGED_COALESCE_MS } from '../../../src/gateway/multiplex/list-changed-window.js';
import { SUBSCRIPTION_ID_META_KEY } from '../../../src/gateway/multiplex/listen-fan-out.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp } from '../../helpers/http-client.js';
import { listenOnLoopback } from '../../helpers/loopback-server.js';
import { multiplexParts } from '../../helpers/multiplex-parts.js';

const PROTOCOL_VERSION = '2025-11-25';
const STATELESS = '2026-07-28';
const STATELESS_META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
const TOOLS_CHANGED = 'notifications/tools/list_changed';
/** Long enough after a change for every window it opened to have ended, in milliseconds. */
const SETTLE_MS = LIST_CHANGED_COALESCE_MS * 5;

/** An MCP server of the official SDK with sessions and one tool; `add` gives every session's server a new tool. */
async function sdkServer(): Promise<{ url: string; http: Server; add: (tool: string) => void }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];
  const http = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      const opened = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void transports.set(id, opened) });
      const server = new McpServer({ name: 'sdk', version: '1' }, { capabilities: { tools: { listChanged: true } } });
      server.tool('first', async () => ({ content: [{ type: 'text', text: 'first' }] }));
      servers.push(server);
      await server.connect(opened);
      transport = opened;
    }
    await transport.handleRequest(req, res, body);
  });
  const url = `${await listenOnLoopback(http)}/mcp`;
  return { url, http, add: (tool) => servers.forEach((server) => server.tool(tool, async () => ({ content: [] }))) };
}

/** A running {@link rawServer}: how many of its streams are open and have ended, `notify`, and the listens it got. */
interface RawServer {
  url: string;
  http: Server;
  open: () => number;
  ended: () => number;
  notify: (count: number, method?: string, params?: Record<string, unknown>) => void;
  /** The `params.notifications` of each `subscriptions/listen` it was sent. */
  listens: unknown[];
}

/**
 * A raw MCP server with sessions whose GET streams and `subscriptions/listen` streams stay open: `notify` writes
 * `count` tools `list_changed` (or notifications of `method` with `params`) to each in one chunk (stamped with the
 * subscription id on a listen stream). With `resources`, it lists them and offers subscriptions.
 */
async function rawServer(resources?: readonly string[]): Promise<RawServer> {
  const streams = new Map<ServerResponse, unknown>();
  const listens: unknown[] = [];
  let ended = 0;
  const keepOpen = (res: ServerResponse, subscription: unknown): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
    streams.set(res, subscription);
    res.on('close', () => {
      streams.delete(res);
      ended++;
    });
  };
  const http = createServer((req, res) => {
    if (req.method === 'GET') return keepOpen(res, undefined);
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      const message = JSON.parse(text) as { id?: string | number; method: string; params?: { notifications?: unknown } };
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'subscriptions/listen') {
        listens.push(message.params?.notifications);
        return keepOpen(res, message.id);
      }
      const capabilities = { tools: { listChanged: true }, ...(resources ? { resources: { subscribe: true, listChanged: true } } : {}) };
      const serverInfo = { name: 'raw', version: '1' };
      const result =
        message.method === 'initialize' ? { protocolVersion: PROTOCOL_VERSION, capabilities, serverInfo }
        : message.method === 'server/discover' ? { supportedVersions: [STATELESS, PROTOCOL_VERSION], capabilities, _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo } }
        : message.method === 'resources/list' ? { resources: (resources ?? []).map((uri) => ({ uri, name: uri })) }
        : { tools: [] };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'raw-session' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
  const url = `${await listenOnLoopback(http)}/mcp`;
  const notify = (count: number, method = TOOLS_CHANGED, params: Record<string, unknown> = {}): void => {
    for (const [res, subscription] of streams) {
      const stamp = subscription === undefined ? {} : { _meta: { [SUBSCRIPTION_ID_META_KEY]: subscription } };
      const note = { jsonrpc: '2.0', method, ...(subscription === undefined && Object.keys(params).length === 0 ? {} : { params: { ...params, ...stamp } }) };
      if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(note)}\n\n`.repeat(count));
    }
  };
  return { url, http, open: () => streams.size, ended: () => ended, notify, listens };
}

/** The messages of an event stream read so far, each with the time it arrived. */
interface Seen {
  messages: { message: Record<string, any>; at: number }[];
}

/** The messages of an event stream as they arrive. */
function readEvents(body: ReadableStream<Uint8Array>): Seen {
  const seen: Seen = { messages: [] };
  void (async () => {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let pending = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        const events = pending.split('\n\n');
        pending = events.pop()!;
        for (const event of events) {
          const data = event.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
          if (data !== '') seen.messages.push({ message: JSON.parse(data) as Record<string, any>, at: Date.now() });
        }
      }
    } catch {
      // The client left.
    }
  })();
  return seen;
}

/** Waits until `done()` holds, at most `ms`. */
async function until(done: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await sleep(5);
  assert.ok(done(), `not within ${ms} ms`);
}

/** Counts writes of a `list_changed` on any response already ended or destroyed, while `run` runs. */
async function writesAfterEnd(run: () => Promise<void>): Promise<number> {
  const write = ServerResponse.prototype.write;
  let late = 0;
  ServerResponse.prototype.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    if ((this.writableEnded || this.destroyed) && String(chunk).includes('list_changed')) late++;
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  try {
    await run();
  } finally {
    ServerResponse.prototype.write = write;
  }
  return late;
}

let token: string;
const parts = multiplexParts();
const { servers: upstreams, gateways } = parts;

/** A gateway in front of the servers at `urls`, named a, b, …, each with its policy in `policies` (by name). */
async function gatewayFor(urls: string[], policies: Record<string, PolicyDefinition> = {}): Promise<RunningGateway> {
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
  const servers: ServerConfig[] = urls.map((url, i) => {
    const name = String.fromCharCode(97 + i);
    return { name, transport: 'http', proxy: { upstream: url }, required: false, ...(policies[name] ? { policy: policies[name] } : {}) };
  });
  const gateway = await startGateway({ ...config, servers, listTimeoutMs: 2_000 }, { log: () => {}, warn: () => {} });
  gateways.push(gateway);
  parts.as.addResource(gateway.resource, { scopes: ['mcp'] });
  token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
  return gateway;
}

/** A client session at `gateway` (every server's session opened by a first list), its GET stream and a lister. */
async function session(gateway: RunningGateway): Promise<{ stream: Response; leave: AbortController; list: () => Promise<string[]> }> {
  const init = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
  const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': PROTOCOL_VERSION };
  await postMcp(gateway.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
  let id = 10;
  const list = async (): Promise<string[]> => {
    const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: id++, method: 'tools/list' }, token, headers);
    assert.equal(answer.status, 200, answer.text);
    return (answer.json.result.tools as { name: string }[]).map((tool) => tool.name);
  };
  await list();
  const leave = new AbortController();
  const stream = await fetch(gateway.resource, { headers: { ...headers, authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: leave.signal });
  assert.equal(stream.status, 200);
  return { stream, leave, list };
}

const changes = (seen: Seen): number => seen.messages.filter((m) => m.message.method === TOOLS_CHANGED).length;

/** Asks `gateway` for a 2026-07-28 `subscriptions/listen` stream of `notifications`. */
function askToListen(gateway: RunningGateway, leave: AbortController, notifications: Record<string, unknown>): Promise<Response> {
  return fetch(gateway.resource, {
    method: 'POST',
    signal: leave.signal,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': STATELESS, 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'subscriptions/listen', params: { notifications, _meta: STATELESS_META } }),
  });
}

/** Opens a 2026-07-28 `subscriptions/listen` stream for tools `list_changed` (or `notifications`) at `gateway`. */
async function listen(gateway: RunningGateway, leave: AbortController, notifications: Record<string, unknown> = { toolsListChanged: true }): Promise<Response> {
  const response = await askToListen(gateway, leave, notifications);
  assert.equal(response.status, 200);
  return response;
}

/**
 * Two raw servers behind a gateway, and a client's stream there (its GET stream, or a listen stream) once each
 * server's stream to the gateway is open.
 */
async function rawSet(stream: 'get' | 'listen'): Promise<{ a: RawServer; b: RawServer; seen: Seen; leave: AbortController }> {
  const a = await rawServer();
  const b = await rawServer();
  upstreams.push(a.http, b.http);
  const gateway = await gatewayFor([a.url, b.url]);
  let leave = new AbortController();
  let body: ReadableStream<Uint8Array>;
  if (stream === 'get') {
    const client = await session(gateway);
    leave = client.leave;
    body = client.stream.body!;
  } else body = (await listen(gateway, leave)).body!;
  const seen = readEvents(body);
  await until(() => a.open() === 1 && b.open() === 1);
  return { a, b, seen, leave };
}

/**
 * Both servers change at once; the client leaves on the first notification, while the second is held back: once
 * every window has ended, nothing was written on the ended stream and the client got one.
 */
async function leaveWithinWindow(a: RawServer, b: RawServer, seen: Seen, leave: AbortController): Promise<void> {
  const late = await writesAfterEnd(async () => {
    a.notify(1);
    b.notify(1);
    await until(() => changes(seen) === 1);
    leave.abort();
    await until(() => a.ended() === 1 && b.ended() === 1);
    await sleep(SETTLE_MS);
  });
  assert.equal(late, 0);
  assert.equal(changes(seen), 1);
}

describe('list_changed on the merged GET stream', () => {
  it('a change on a second server within the window of the first is announced after it, and the next list has both', async () => {
    const a = await sdkServer();
    const b = await sdkServer();
    upstreams.push(a.http, b.http);
    const client = await session(await gatewayFor([a.url, b.url]));
    const seen = readEvents(client.stream.body!);
    await sleep(200); // each server's GET stream opened
    // The client lists again on every notification it gets, as a client does.
    const lists: Promise<string[]>[] = [];
    let handled = 0;
    const relist = setInterval(() => {
      for (; handled < changes(seen); handled++) lists.push(client.list());
    }, 2);
    try {
      a.add('added_a');
      await until(() => changes(seen) >= 1);
      await sleep(40);
      b.add('added_b');
      await sleep(SETTLE_MS);
    } finally {
      clearInterval(relist);
    }
    assert.equal(changes(seen), 2, 'the change of b was announced, once');
    const last = await lists.at(-1)!;
    assert.ok(last.includes('a__added_a') && last.includes('b__added_b'), `the client's last list: ${last.join()}`);
    client.leave.abort();
  });

  it('a burst from one server reaches the client as one notification at once and one when the window ends', async () => {
    const { a, b, seen, leave } = await rawSet('get');
    const start = Date.now();
    a.notify(20);
    await sleep(10);
    b.notify(5);
    await sleep(SETTLE_MS);
    const times = seen.messages.filter((m) => m.message.method === TOOLS_CHANGED).map((m) => m.at - start);
    assert.equal(times.length, 2, `notifications at ${times.join()} ms`);
    // Timed from the first notify (the window opens after it): on a busy machine the first may reach the client late,
    // so the gap between the two as received says less than the second's own time.
    assert.ok(times[1]! >= LIST_CHANGED_COALESCE_MS - 10, `the second followed the window: ${times.join()} ms`);
    leave.abort();
  });

  it('writes nothing once the client left within the window', async () => {
    const { a, b, seen, leave } = await rawSet('get');
    await leaveWithinWindow(a, b, seen, leave);
  });
});

describe('list_changed on a subscriptions/listen stream (2026-07-28)', () => {
  it('a change on a second server within the window follows as one notification stamped with the subscription', async () => {
    const { a, b, seen, leave } = await rawSet('listen');
    const start = Date.now();
    a.notify(1);
    await until(() => changes(seen) === 1);
    b.notify(3);
    await sleep(SETTLE_MS);
    const notes = seen.messages.filter((m) => m.message.method === TOOLS_CHANGED);
    assert.equal(notes.length, 2, JSON.stringify(notes));
    assert.ok(notes[1]!.at - start >= LIST_CHANGED_COALESCE_MS - 10, `the second at ${notes[1]!.at - start} ms`);
    for (const { message } of notes) assert.equal(message.params?._meta?.[SUBSCRIPTION_ID_META_KEY], 'sub', JSON.stringify(message));
    leave.abort();
  });

  it('writes nothing once the client left within the window', async () => {
    const { a, b, seen, leave } = await rawSet('listen');
    await leaveWithinWindow(a, b, seen, leave);
  });
});

describe('what a subscriptions/listen stream carries (2026-07-28)', () => {
  it('only what the caller asked for and may see, whichever server sends what', async () => {
    const a = await rawServer(['notes://a/public', 'notes://a/secret']);
    const b = await rawServer(['notes://b/other']);
    upstreams.push(a.http, b.http);
    // The caller holds `mcp` only: a's secret needs `admin`.
    const gateway = await gatewayFor([a.url, b.url], { a: { resources: { 'notes://a/secret': ['admin'] } } });
    const refused = await askToListen(gateway, new AbortController(), { resourceSubscriptions: ['notes://a/secret'] });
    assert.equal(refused.status, 403, await refused.text());
    assert.deepEqual([a.listens, b.listens], [[], []], 'no server was asked to listen for a resource the caller may not see');

    const leave = new AbortController();
    const seen = readEvents((await listen(gateway, leave, { toolsListChanged: true, resourceSubscriptions: ['notes://a/public'] })).body!);
    await until(() => a.open() === 1 && b.open() === 1);
    assert.deepEqual(a.listens, [{ toolsListChanged: true, resourceSubscriptions: ['notes://a/public'] }], 'each server is asked its part');
    assert.deepEqual(b.listens, [{ toolsListChanged: true }]);
    const updated = 'notifications/resources/updated';
    // Asked for by no one, or hidden from this caller: none of these reaches it.
    a.notify(1, updated, { uri: 'notes://a/secret' });
    a.notify(1, 'notifications/prompts/list_changed');
    a.notify(1, 'notifications/message', { level: 'info', data: 'a log line' });
    b.notify(1, updated, { uri: 'notes://b/other' });
    b.notify(1, updated, { uri: 'notes://a/public' });
    b.notify(1, 'notifications/resources/list_changed');
    // What it asked for, each server's last: once these arrived, all the others were read.
    a.notify(1, updated, { uri: 'notes://a/public' });
    b.notify(1);
    await until(() => seen.messages.length >= 3);
    await sleep(50);
    const methods = seen.messages.map(({ message }) => [message.method, message.params?.uri]);
    assert.deepEqual(methods.slice(0, 1), [['notifications/subscriptions/acknowledged', undefined]]);
    assert.deepEqual(methods.slice(1).sort(), [[updated, 'notes://a/public'], [TOOLS_CHANGED, undefined]].sort(), JSON.stringify(seen.messages));
    for (const { message } of seen.messages) assert.equal(message.params?._meta?.[SUBSCRIPTION_ID_META_KEY], 'sub', JSON.stringify(message));
    leave.abort();
  });
});
