/**
 * Resumable streams with a stdio upstream (MCP Streamable HTTP 2025-11-25, "Resumability and Redelivery"): the
 * gateway is the MCP server, so it numbers the events of each stream and keeps them, per session and bounded,
 * for a client that lost its connection and comes back with `Last-Event-ID`. Real Node stdio children, real
 * HTTP on 127.0.0.1, tokens from the real authorization server; the clients drop their streams half-way by
 * closing the socket, as a network failure would.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../../../src/gateway/upstream/stdio/stdio-upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { droppingFetch } from '../../../helpers/dropping-fetch.js';
import { postMcp, send } from '../../../helpers/http-client.js';
import { NODE_SERVER, PROTOCOL_VERSION, quote, RawSession, startStdioGateway } from '../../../helpers/stdio-gateway.js';

const NODE_COMMAND = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;

interface SseEvent {
  id: string | undefined;
  data: string;
}

/** An HTTP answer read as it arrives: an event stream's events one by one, anything else whole. */
class StreamReader {
  status = 0;
  headers: IncomingHttpHeaders = {};
  text = '';
  readonly events: SseEvent[] = [];
  readonly ended: Promise<void>;
  private pending = '';
  private wake: (() => void) | undefined;
  private readonly req;

  constructor(url: string, init: { method: string; headers: Record<string, string>; body?: string }) {
    let finish!: () => void;
    this.ended = new Promise((resolve) => (finish = resolve));
    this.req = request(url, { method: init.method, headers: init.headers }, (res) => {
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => this.feed(chunk));
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      this.wake?.();
    });
    this.req.on('error', finish);
    this.req.end(init.body);
  }

  private feed(chunk: string): void {
    this.text += chunk;
    this.pending += chunk;
    let end: number;
    while ((end = this.pending.indexOf('\n\n')) !== -1) {
      const block = this.pending.slice(0, end);
      this.pending = this.pending.slice(end + 2);
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      this.events.push({ id, data: data.join('\n') });
    }
    this.wake?.();
  }

  /** Waits until `ready(events)` holds, or the answer ends (then throws), or 15 s pass. */
  async until(ready: (events: readonly SseEvent[]) => boolean): Promise<void> {
    const deadline = Date.now() + 15_000;
    let done = false;
    void this.ended.then(() => (done = true));
    while (!ready(this.events)) {
      if (done) throw new Error(`the answer ended first: ${this.status} ${this.text.slice(0, 300)}`);
      if (Date.now() > deadline) throw new Error(`not ready after 15 s: ${this.text.slice(0, 300)}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  /** Drops the connection, as a network failure would. */
  drop(): void {
    this.req.destroy();
  }

  /** The JSON-RPC messages received (priming events, with empty data, left out). */
  messages(): any[] {
    return this.events.filter((e) => e.data !== '').map((e) => JSON.parse(e.data));
  }

  lastId(): string {
    const id = [...this.events].reverse().find((e) => e.id !== undefined)?.id;
    assert.ok(id, 'no event carried an id');
    return id;
  }
}

function headersOf(session: RawSession, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${session.token}`, accept: 'application/json, text/event-stream', ...session.headers(), ...extra };
}

/** POSTs a tools/call of `ticks` with a progress token, read as a stream. */
function ticks(session: RawSession, args: Record<string, unknown>, id: number | string = 7): StreamReader {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'ticks', arguments: args, _meta: { progressToken: `p-${id}` } } });
  return new StreamReader(session.url, { method: 'POST', headers: { ...headersOf(session), 'content-type': 'application/json' }, body });
}

/** GETs the session's stream, resuming after `lastEventId` when given. */
function getStream(session: RawSession, lastEventId?: string): StreamReader {
  return new StreamReader(session.url, { method: 'GET', headers: headersOf(session, lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) });
}

const progressOf = (messages: readonly any[]): number[] => messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progress as number);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const BASE = 'mcp:basic';
const ADMIN = 'mcp:admin';
let as: AuthorizationServer;
let dir: string;
let policyFile: string;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: [BASE, ADMIN] });
  dir = mkdtempSync(join(tmpdir(), 'stdio-resume-'));
  policyFile = join(dir, 'policy.json');
  // env_names is for admins: a list answer replayed to a caller without that scope must not show it.
  writeFileSync(policyFile, JSON.stringify({ scopesSupported: [BASE, ADMIN], requiredScopes: [BASE], tools: { '*': [], env_names: [ADMIN] } }));
});

after(async () => {
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('resumable streams of a stdio upstream', { timeout: 90_000 }, () => {
  let gateway: RunningGateway;
  let upstream: StdioUpstream;

  async function session(sub: string): Promise<RawSession> {
    const s = new RawSession(gateway.resource, await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub }));
    const init = await s.initialize();
    assert.equal(init.status, 200, init.text);
    return s;
  }

  before(async () => {
    ({ gateway, upstream } = await startStdioGateway(as, NODE_COMMAND, { MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '2000', MCP_AUTH_POLICY: policyFile }, [BASE, ADMIN]));
  });

  after(async () => {
    await gateway?.shutdown();
    assert.equal(upstream.processes, 0);
  });

  it('a client that drops a POST stream half-way and resumes it gets every message it missed, once, in order', async () => {
    const alice = await session('alice');
    const first = ticks(alice, { steps: 6, ms: 40 });
    await first.until((events) => progressOf(events.filter((e) => e.data !== '').map((e) => JSON.parse(e.data))).length >= 2);
    first.drop();
    assert.equal(first.status, 200);
    assert.match(String(first.headers['content-type']), /^text\/event-stream/);
    // 2025-11-25: the stream starts with a priming event, an id and no data, and every event has an id.
    assert.equal(first.events[0]!.data, '');
    assert.ok(first.events.every((e) => e.id !== undefined));
    const cursor = first.lastId();
    const before = first.messages();

    const resumed = getStream(alice, cursor);
    await resumed.ended;
    assert.equal(resumed.status, 200, resumed.text);
    const all = [...before, ...resumed.messages()];
    assert.deepEqual(progressOf(all), [1, 2, 3, 4, 5, 6]);
    const last = all[all.length - 1];
    assert.equal(last.id, 7);
    assert.equal(last.result.content[0].text, 'ticked 6 times');
    assert.equal(all.filter((m) => m.id === 7).length, 1);
    // Ids are unique across both connections, and the resumed events follow the cursor.
    const ids = [...first.events, ...resumed.events].map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length);

    // The stream ended; resuming it from the same cursor again replays the same rest and ends.
    const again = getStream(alice, cursor);
    await again.ended;
    assert.deepEqual(again.messages(), resumed.messages());
    // The session still serves, and its GET stream is still free.
    assert.equal(await alice.text('add', { a: 2, b: 3 }), '5');
  });

  it('a newer connection resuming a stream takes it over from one the gateway still holds', async () => {
    const alice = await session('alice');
    const first = ticks(alice, { steps: 5, ms: 60 }, 'take');
    await first.until((events) => events.some((e) => e.data.includes('"progress":1')));
    // What the client read before it chose to resume; it reads nothing more from the old connection.
    const seen = first.messages();
    const resumed = getStream(alice, first.lastId());
    await resumed.ended;
    await first.ended;
    const all = [...seen, ...resumed.messages()];
    assert.deepEqual(progressOf(all), [1, 2, 3, 4, 5]);
    assert.equal(all.filter((m) => m.id === 'take').length, 1);
  });

  it("a dropped GET stream resumes with what was sent on it while the client was away, and nothing twice", async () => {
    const alice = await session('alice');
    const listening = getStream(alice);
    // Its priming event: the gateway holds the stream, so the notification below goes to it.
    await listening.until((events) => events.length >= 1);
    assert.equal((await alice.call('later', { data: 'one', ms: 20 })).status, 200);
    await listening.until((events) => events.some((e) => e.data.includes('"one"')));
    listening.drop();
    await listening.ended;
    // Sent while no connection carries the GET stream: kept for the resume.
    assert.equal((await alice.call('later', { data: 'two', ms: 20 })).status, 200);
    await sleep(200);
    const resumed = getStream(alice, listening.lastId());
    await resumed.until((events) => events.some((e) => e.data.includes('"two"')));
    assert.equal(resumed.status, 200);
    const data = [...listening.messages(), ...resumed.messages()].map((m) => m.params?.data);
    assert.deepEqual(data, ['one', 'two']);
    resumed.drop();
  });

  it("a request of the child's goes to a connected stream, never to a GET stream whose client is away", async () => {
    const hana = await session('hana');
    const listening = getStream(hana);
    await listening.until((events) => events.length >= 1);
    listening.drop();
    await listening.ended;
    await sleep(100);
    // Two requests waiting, then one whose tool asks the client for sampling: it must reach that one's stream.
    const waiting = [1, 2].map((n) => new StreamReader(hana.url, { method: 'POST', headers: { ...headersOf(hana), 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: `w${n}`, method: 'tools/call', params: { name: 'slow', arguments: { ms: 1500 } } }) }));
    await sleep(100);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'ask', method: 'tools/call', params: { name: 'ask_client', arguments: { question: 'hi' } } });
    const asking = new StreamReader(hana.url, { method: 'POST', headers: { ...headersOf(hana), 'content-type': 'application/json' }, body });
    await asking.until((events) => events.some((e) => e.data.includes('sampling/createMessage')));
    const sampling = asking.messages().find((m) => m.method === 'sampling/createMessage');
    assert.equal((await hana.post({ jsonrpc: '2.0', id: sampling.id, result: { role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'm' } })).status, 202);
    await asking.ended;
    assert.equal(asking.messages().find((m) => m.id === 'ask').result.content[0].text, 'client said: hello');
    await Promise.all(waiting.map((w) => w.ended));

    // Nothing connected that can carry it (the GET is away, the POST takes JSON only): answered with an error at
    // once, so the tool finishes now instead of waiting for the gateway's timeout.
    const json = await hana.post({ jsonrpc: '2.0', id: 'ask2', method: 'tools/call', params: { name: 'ask_client', arguments: {} } }, { accept: 'application/json' });
    assert.equal(json.status, 200, json.text);
    assert.equal(json.json.result.content[0].text, 'client said: no answer');
  });

  it("an id the session never issued, or another session's, gets 400; another caller's session stays 404", async () => {
    // Subjects of their own: the earlier tests hold sessions of alice's, up to the bound per caller.
    const alice = await session('dora');
    const aliceOther = await session('dora');
    const bob = await session('erin');
    // Each session gets streams of its own first: a session with none refuses every id before reading it, so the
    // refusals below come from the check of whose id it is.
    for (const s of [alice, bob]) await ticks(s, { steps: 1, ms: 10 }, 'own').ended;
    const stream = ticks(aliceOther, { steps: 2, ms: 10 });
    await stream.ended;
    const foreignId = stream.lastId();
    for (const [who, id] of [
      [alice, 'not-an-event-id'],
      [alice, foreignId],
      [bob, foreignId],
    ] as const) {
      const answer = await send(who.url, { method: 'GET', headers: headersOf(who, { 'last-event-id': id }) });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.json.error.code, -32600);
      assert.match(answer.json.error.message, /Last-Event-ID/);
    }
    // Naming alice's session with bob's token is refused as an unknown session, whatever the event id.
    const answer = await send(bob.url, { method: 'GET', headers: { ...headersOf(bob, { 'last-event-id': foreignId }), 'mcp-session-id': aliceOther.sessionId! } });
    assert.equal(answer.status, 404);
    assert.equal(answer.json.error.code, -32001);
    // The owner can still resume it.
    const owner = getStream(aliceOther, stream.events[0]!.id);
    await owner.ended;
    assert.equal(owner.status, 200);
    assert.deepEqual(progressOf(owner.messages()), [1, 2]);
  });

  it('a list answer replayed on a resumed stream is filtered for the caller, as the original was', async () => {
    const frank = await session('frank');
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'list', method: 'tools/list', params: { _meta: { progressToken: 'l' } } });
    const original = new StreamReader(frank.url, { method: 'POST', headers: { ...headersOf(frank), 'content-type': 'application/json' }, body });
    await original.ended;
    const progress = original.events.find((e) => e.data.includes('notifications/progress'));
    assert.ok(progress?.id, original.text);
    const names = (messages: readonly any[]): string[] => messages.find((m) => m.id === 'list').result.tools.map((t: { name: string }) => t.name);
    assert.ok(names(original.messages()).includes('add'));
    assert.ok(!names(original.messages()).includes('env_names'));
    // Resumed after the progress event: the answer comes from the replay buffer, on a GET the guard does not filter.
    const replayed = getStream(frank, progress.id);
    await replayed.ended;
    assert.equal(replayed.status, 200, replayed.text);
    assert.deepEqual(names(replayed.messages()), names(original.messages()));

    // The policy narrows (add now needs the admin scope): the same kept answer, replayed again, is filtered under
    // the policy in force at the replay, as a live answer would be.
    const { tools: _tools, ...base } = JSON.parse(readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
    try {
      await gateway.guard.setPolicy({ ...base, tools: { '*': [], env_names: [ADMIN], add: [ADMIN] } } as never);
      const again = getStream(frank, progress.id);
      await again.ended;
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(names(again.messages()), names(original.messages()).filter((name) => name !== 'add'));
    } finally {
      await gateway.guard.setPolicy(JSON.parse(readFileSync(policyFile, 'utf8')) as never);
    }
  });

  it('Accept is read by its rules: text/event-stream;q=0 gets JSON, and a GET or resume that refuses event streams gets 406', async () => {
    const ivan = await session('ivan');
    const body = { jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'progress', arguments: { steps: 2 }, _meta: { progressToken: 'q' } } };
    const refused = await ivan.post(body, { accept: 'application/json, text/event-stream;q=0' });
    assert.equal(refused.status, 200, refused.text);
    assert.match(String(refused.headers['content-type']), /^application\/json/);
    assert.equal(refused.json.result.content[0].text, 'done after 2 steps');
    const streamed = ticks(ivan, { steps: 2, ms: 10 });
    await streamed.ended;
    for (const extra of [{}, { 'last-event-id': streamed.lastId() }] as Record<string, string>[]) {
      const answer = await send(ivan.url, { method: 'GET', headers: { ...headersOf(ivan, extra), accept: 'application/json' } });
      assert.equal(answer.status, 406, answer.text);
      assert.equal(answer.json.error.code, -32600);
      assert.match(answer.json.error.message, /text\/event-stream/);
    }
  });

  it('2026-07-28 requests have no resumable streams: no event ids', async () => {
    const token = await as.issueAccessToken({ resource: gateway.resource, scope: BASE, sub: 'gina' });
    const answer = await postMcp(
      gateway.resource,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ticks', arguments: { steps: 2, ms: 10 }, _meta: { progressToken: 's', 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } },
      token,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ticks' },
    );
    assert.equal(answer.status, 200, answer.text);
    assert.match(String(answer.headers['content-type']), /^text\/event-stream/);
    assert.match(answer.text, /notifications\/progress/);
    assert.doesNotMatch(answer.text, /^id:/m);
  });

  it('the SDK client resumes a POST stream it lost by itself, and gets its progress and result once', async () => {
    const token = await as.issueAccessToken({ resource: gateway.resource, scope: BASE, sub: 'sdk-user' });
    // Breaks the first ticks answer after its second progress event, as a dropped connection would.
    const dropping = droppingFetch('"ticks"', 2);
    const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: dropping.fetch,
      reconnectionOptions: { initialReconnectionDelay: 20, maxReconnectionDelay: 200, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
    });
    const client = new Client({ name: 'resume-test', version: '1.0.0' });
    client.onerror = () => {}; // the deliberate break is reported here
    await client.connect(transport);
    try {
      const progress: number[] = [];
      const result = await client.callTool({ name: 'ticks', arguments: { steps: 6, ms: 40 } }, undefined, { onprogress: (p) => void progress.push(p.progress), timeout: 20_000 });
      assert.equal(dropping.dropped(), true);
      assert.deepEqual(progress, [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(result.content, [{ type: 'text', text: 'ticked 6 times' }]);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
});

describe('resumable streams: the bounds', { timeout: 60_000 }, () => {
  let gateway: RunningGateway;
  let upstream: StdioUpstream;

  before(async () => {
    ({ gateway, upstream } = await startStdioGateway(as, NODE_COMMAND, {
      MCP_AUTH_UPSTREAM_REPLAY_BYTES: '4096',
      MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS: '1500',
      MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: '2000',
    }));
  });

  after(async () => {
    await gateway?.shutdown();
    assert.equal(upstream.processes, 0);
  });

  async function session(sub: string): Promise<RawSession> {
    const s = new RawSession(gateway.resource, await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub }));
    assert.equal((await s.initialize()).status, 200);
    return s;
  }

  it('past the byte bound the oldest events are gone: a cursor before them gets 400, a recent one resumes', async () => {
    const alice = await session('alice');
    // Each progress event is about 3 KB: the second pushes the first out of the 4 KB buffer.
    const stream = ticks(alice, { steps: 4, ms: 30, pad: 3000, padSteps: 2 });
    await stream.until((events) => events.filter((e) => e.data.includes('notifications/progress')).length >= 2);
    stream.drop();
    const tooOld = await send(alice.url, { method: 'GET', headers: headersOf(alice, { 'last-event-id': stream.events[0]!.id! }) });
    assert.equal(tooOld.status, 400, tooOld.text);
    assert.match(tooOld.json.error.message, /no longer kept/);
    const recent = getStream(alice, stream.lastId());
    await recent.ended;
    const all = [...stream.messages(), ...recent.messages()];
    assert.deepEqual(progressOf(all), [1, 2, 3, 4]);
    assert.equal(all[all.length - 1].result.content[0].text, 'ticked 4 times');
  });

  it('a stream not resumed within the window has its request cancelled, and its events are gone', async () => {
    const alice = await session('alice');
    // Long enough that it cannot finish by itself during the test.
    const stream = ticks(alice, { steps: 400, ms: 50 });
    await stream.until((events) => events.some((e) => e.data.includes('notifications/progress')));
    stream.drop();
    const deadline = Date.now() + 8_000;
    while (upstream.inFlight > 0 && Date.now() < deadline) await sleep(50);
    assert.equal(upstream.inFlight, 0, 'the abandoned request is still running');
    await sleep(1_600);
    const late = await send(alice.url, { method: 'GET', headers: headersOf(alice, { 'last-event-id': stream.lastId() }) });
    assert.equal(late.status, 400, late.text);
    assert.match(late.json.error.message, /no longer kept/);
    // The session itself lives on.
    assert.equal(await alice.text('add', { a: 1, b: 1 }), '2');
  });

  it('a stream whose window ran out ends with a JSON-RPC error for its request, which a resume right then receives', async () => {
    const alice = await session('alice');
    // A tool that asks the client and then waits: nothing more is sent on the stream once the client is away.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'gone', method: 'tools/call', params: { name: 'ask_client', arguments: {} } });
    const stream = new StreamReader(alice.url, { method: 'POST', headers: { ...headersOf(alice), 'content-type': 'application/json' }, body });
    await stream.until((events) => events.some((e) => e.data.includes('sampling/createMessage')));
    const cursor = stream.lastId();
    stream.drop();
    const deadline = Date.now() + 8_000;
    while (upstream.inFlight > 0 && Date.now() < deadline) await sleep(50);
    assert.equal(upstream.inFlight, 0, 'the abandoned request is still running');
    // Resumed just after the request was given up, while its last events are still kept.
    const late = getStream(alice, cursor);
    await late.ended;
    assert.equal(late.status, 200, late.text);
    const last = late.messages().at(-1);
    assert.equal(last.id, 'gone');
    assert.equal(last.error.code, -32603);
    assert.match(last.error.message, /did not resume/);
  });

  it('MCP_AUTH_UPSTREAM_REPLAY_BYTES=0: no event ids, and a dropped stream cancels its request', async () => {
    const off = await startStdioGateway(as, NODE_COMMAND, { MCP_AUTH_UPSTREAM_REPLAY_BYTES: '0' });
    try {
      const s = new RawSession(off.gateway.resource, await as.issueAccessToken({ resource: off.gateway.resource, scope: 'mcp:basic', sub: 'carol' }));
      assert.equal((await s.initialize()).status, 200);
      const stream = ticks(s, { steps: 400, ms: 50 });
      await stream.until((events) => events.some((e) => e.data.includes('notifications/progress')));
      assert.ok(stream.events.every((e) => e.id === undefined));
      stream.drop();
      const deadline = Date.now() + 8_000;
      while (off.upstream.inFlight > 0 && Date.now() < deadline) await sleep(20);
      assert.equal(off.upstream.inFlight, 0);
    } finally {
      await off.gateway.shutdown();
    }
  });
});

// Keeps PROTOCOL_VERSION in view: the priming assertions above hold for 2025-11-25 clients.
assert.equal(PROTOCOL_VERSION, '2025-11-25');
