/**
 * Sealed session ids (`MCP_AUTH_SESSION_SECRET`) through real gateways: the test authorization server mints real
 * tokens, several gateway processes' worth of `startGateway` share one secret (replicas) in front of one real
 * upstream on 127.0.0.1 that mints its own session ids and records what reaches it, and the stdio upstream runs
 * real child processes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeProtectedHeader } from 'jose';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { parseSessionSecret } from '../../src/core/session/session-seal.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../src/gateway/upstream/stdio/stdio-upstream.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { droppingFetch } from '../helpers/dropping-fetch.js';
import { startTestIssuer } from '../helpers/fake-issuer.js';
import { postMcp, send, type HttpAnswer } from '../helpers/http-client.js';
import { childEvents, NODE_SERVER, quote } from '../helpers/stdio-gateway.js';

/** One resource for every replica, as behind a load balancer: the token audience is the fleet's public URL. */
const RESOURCE = 'http://127.0.0.1:1/mcp';
const VERSION = '2025-11-25';
const STATELESS = '2026-07-28';
const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'sealed-test', version: '1' } } };
const call = (id: number, name = 'echo', args: Record<string, unknown> = { text: 'hi' }): object => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

let as: AuthorizationServer;
let upstream: { url: string; received: { method: string; headers: IncomingHttpHeaders; body: string }[]; issued: string[] };
let upstreamServer: Server;
let dir: string;
const gateways: RunningGateway[] = [];

const secret = (): string => randomBytes(32).toString('base64');

/** An upstream MCP server that mints a session per initialize and answers 404 for ids it never issued. */
async function startSessionUpstream(): Promise<void> {
  const received: { method: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const issued: string[] = [];
  upstreamServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', headers: req.headers, body });
      const message = body ? (JSON.parse(body) as { id?: unknown; method?: string }) : undefined;
      const reply = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
        const text = JSON.stringify(payload);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
      };
      const sid = req.headers['mcp-session-id'];
      if (message?.method === 'initialize') {
        const id = `upstream-session-${issued.length + 1}-${randomBytes(8).toString('hex')}`;
        issued.push(id);
        reply(200, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: VERSION, capabilities: { tools: {} }, serverInfo: { name: 'recording', version: '1' } } }, { 'mcp-session-id': id });
        return;
      }
      // 2026-07-28 is stateless: a request of that revision is answered without a session.
      if (req.headers['mcp-protocol-version'] === STATELESS && sid === undefined) {
        reply(200, { jsonrpc: '2.0', id: message?.id ?? null, result: { resultType: 'complete', content: [{ type: 'text', text: 'stateless' }] } });
        return;
      }
      if (typeof sid !== 'string' || !issued.includes(sid)) {
        reply(404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
        return;
      }
      if (req.method === 'DELETE') {
        issued.splice(issued.indexOf(sid), 1);
        res.writeHead(200, { 'content-length': '0' }).end();
        return;
      }
      if (message && !('id' in message)) {
        res.writeHead(202, { 'content-length': '0' }).end();
        return;
      }
      // Servers repeat the session id on their answers; the gateway must hand back the client's sealed one.
      reply(200, { jsonrpc: '2.0', id: message?.id ?? null, result: { content: [{ type: 'text', text: `session ${sid}` }] } }, { 'mcp-session-id': sid });
    });
  });
  upstreamServer.listen(0, '127.0.0.1');
  await once(upstreamServer, 'listening');
  upstream = { url: `http://127.0.0.1:${(upstreamServer.address() as AddressInfo).port}/mcp`, received, issued };
}

/** A replica in front of the HTTP upstream, with its request log kept. */
async function replica(settings: Record<string, string>): Promise<{ gateway: RunningGateway; url: string; logs: string[] }> {
  const logs: string[] = [];
  const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_RESOURCE: RESOURCE, HOST: '127.0.0.1', PORT: '0', ...settings });
  const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
  gateways.push(gateway);
  await gateway.guard.ready();
  return { gateway, url: `${gateway.url}/mcp`, logs };
}

function token(sub: string): Promise<string> {
  return as.issueAccessToken({ resource: RESOURCE, scope: 'mcp:basic', sub });
}

function sessionHeaders(sessionId: string): Record<string, string> {
  return { 'mcp-session-id': sessionId, 'mcp-protocol-version': VERSION };
}

async function initialize(url: string, bearer: string): Promise<string> {
  const answer = await postMcp(url, INITIALIZE, bearer);
  assert.equal(answer.status, 200, answer.text);
  const id = answer.headers['mcp-session-id'];
  assert.equal(typeof id, 'string');
  return id as string;
}

/** The request log's refusal reasons (the gateway logs each refused session with why). */
function refusals(logs: readonly string[]): string[] {
  return logs.map((l) => JSON.parse(l) as { reason?: string }).flatMap((e) => (e.reason?.startsWith('session_') ? [e.reason] : []));
}

/** What an answer's headers say, without those that differ on every answer. */
function stableHeaders(answer: HttpAnswer): Record<string, unknown> {
  const { date: _date, ...rest } = answer.headers;
  return rest;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sealed-sessions-'));
  as = await startAuthorizationServer({ extraScopes: ['mcp:basic'], resources: { [RESOURCE]: { scopes: ['mcp:basic'] } } });
  await startSessionUpstream();
});

after(async () => {
  for (const gateway of gateways) await gateway.shutdown();
  upstreamServer?.closeAllConnections();
  upstreamServer?.close();
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('sealed session ids across replicas (HTTP upstream)', { timeout: 60_000 }, () => {
  const key = secret();
  let alice: string;
  let bob: string;
  let a: Awaited<ReturnType<typeof replica>>;
  let b: Awaited<ReturnType<typeof replica>>;

  before(async () => {
    alice = await token('alice');
    bob = await token('bob');
    a = await replica({ MCP_AUTH_SESSION_SECRET: key });
    b = await replica({ MCP_AUTH_SESSION_SECRET: key });
  });

  it('gives the client a sealed id that another replica opens to the upstream\'s own session', async () => {
    const sealed = await initialize(a.url, alice);
    const upstreamId = upstream.issued.at(-1)!;
    assert.notEqual(sealed, upstreamId, 'the upstream\'s id is not handed out');
    assert.ok(!sealed.includes(upstreamId));
    assert.equal(decodeProtectedHeader(sealed).kid, parseSessionSecret(key, 'S')[0]!.kid);
    // Measured: the sealed id of this upstream's 42-character session ids.
    assert.ok(sealed.length < 300, `${sealed.length} characters`);

    const before = upstream.received.length;
    const answer = await postMcp(b.url, call(1), alice, sessionHeaders(sealed));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.content[0].text, `session ${upstreamId}`);
    assert.equal(answer.headers['mcp-session-id'], sealed, 'the upstream repeated its id; the client gets its sealed id back');
    const forwarded = upstream.received.slice(before);
    assert.equal(forwarded.length, 1);
    assert.equal(forwarded[0]!.headers['mcp-session-id'], upstreamId, 'the upstream gets its own id');
    assert.equal(forwarded[0]!.headers.authorization, undefined);
    // Back on the first replica, and DELETE from the second ends it upstream.
    assert.equal((await postMcp(a.url, call(2), alice, sessionHeaders(sealed))).status, 200);
    const deleted = await send(b.url, { method: 'DELETE', headers: { authorization: `Bearer ${alice}`, ...sessionHeaders(sealed) } });
    assert.equal(deleted.status, 200);
    assert.ok(!upstream.issued.includes(upstreamId));
    // The upstream now knows nothing of it: its 404 is passed on, and the sealed id is still no one else's.
    assert.equal((await postMcp(a.url, call(3), alice, sessionHeaders(sealed))).status, 404);
  });

  it('ignores an Mcp-Session-Id on a 2026-07-28 request (a stateless revision), sealed or not, and forwards none', async () => {
    const plain = await replica({});
    const request = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} } } };
    const headers = { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'echo', 'mcp-session-id': 'left-over-from-2025' };
    for (const gateway of [a, plain]) {
      const before = upstream.received.length;
      const answer = await postMcp(gateway.url, request, alice, headers);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.json.result.content[0].text, 'stateless');
      assert.equal(answer.headers['mcp-session-id'], undefined);
      assert.deepEqual(upstream.received.slice(before).map((r) => r.headers['mcp-session-id']), [undefined], 'no session id reaches the upstream');
    }
  });

  it('keeps serving a session after its replica restarts with the same secret', async () => {
    const c = await replica({ MCP_AUTH_SESSION_SECRET: key });
    const sealed = await initialize(c.url, alice);
    await c.gateway.shutdown();
    const restarted = await replica({ MCP_AUTH_SESSION_SECRET: key });
    const answer = await postMcp(restarted.url, call(4), alice, sessionHeaders(sealed));
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.json.result.content[0].text, /^session upstream-session-/);
  });

  it('answers a tampered id, an unknown key\'s, another caller\'s, and an unsealed one with the unsealed 404, forwarding nothing', async () => {
    const plain = await replica({});
    const sealed = await initialize(a.url, alice);
    const upstreamId = upstream.issued.at(-1)!;
    const stranger = await replica({ MCP_AUTH_SESSION_SECRET: secret() });
    const foreign = await initialize(stranger.url, alice);
    // As today without a secret: an id this process never saw issued.
    const reference = await postMcp(plain.url, call(5), alice, sessionHeaders('never-issued'));
    assert.equal(reference.status, 404);
    assert.deepEqual(reference.json, { jsonrpc: '2.0', id: 5, error: { code: -32001, message: 'Session not found' } });

    const parts = sealed.split('.');
    const flipped = (part: number): string => {
      const p = [...parts];
      p[part] = `${p[part]!.slice(0, 5)}${p[part]![5] === 'A' ? 'B' : 'A'}${p[part]!.slice(6)}`;
      return p.join('.');
    };
    const cases: Array<[string, string, string]> = [
      ['tampered ciphertext', flipped(3), alice],
      ['tampered tag', flipped(4), alice],
      ['tampered header', flipped(0), alice],
      ['sealed with a key this fleet does not hold', foreign, alice],
      ["another caller's token", sealed, bob],
      ["the upstream's raw id", upstreamId, alice],
    ];
    const before = upstream.received.length;
    const logsBefore = b.logs.length;
    for (const [what, id, bearer] of cases) {
      const answer = await postMcp(b.url, call(5), bearer, sessionHeaders(id));
      assert.equal(answer.status, 404, what);
      assert.equal(answer.text, reference.text, `${what}: the same body`);
      assert.deepEqual(stableHeaders(answer), stableHeaders(reference), `${what}: the same headers`);
    }
    const get = await send(b.url, { method: 'GET', headers: { authorization: `Bearer ${bob}`, accept: 'text/event-stream', ...sessionHeaders(sealed) } });
    const del = await send(b.url, { method: 'DELETE', headers: { authorization: `Bearer ${bob}`, ...sessionHeaders(sealed) } });
    assert.deepEqual([get.status, del.status], [404, 404], "another caller's GET stream and DELETE are refused too");
    assert.equal(upstream.received.length, before, 'nothing reached the upstream');
    const reasons = refusals(b.logs.slice(logsBefore));
    assert.equal(reasons.filter((r) => r === 'session_owner_mismatch').length, 3, reasons.join(', '));
    assert.ok(reasons.includes('session_key_unknown'), reasons.join(', '));
    assert.equal(reasons.length, cases.length + 2, 'each refusal is logged with why');
    // The owner's session is untouched.
    assert.equal((await postMcp(b.url, call(6), alice, sessionHeaders(sealed))).status, 200);
  });

  it('rotates keys: a replica given "new,old" opens old ids and seals new ones with the new key', async () => {
    const newKey = secret();
    const old = await initialize(a.url, alice);
    const rotated = await replica({ MCP_AUTH_SESSION_SECRET: `${newKey},${key}` });
    assert.equal((await postMcp(rotated.url, call(7), alice, sessionHeaders(old))).status, 200, 'an id sealed before the rotation still opens');
    const fresh = await initialize(rotated.url, alice);
    assert.equal(decodeProtectedHeader(fresh).kid, parseSessionSecret(newKey, 'S')[0]!.kid);
    assert.equal((await postMcp(rotated.url, call(8), alice, sessionHeaders(fresh))).status, 200);
    // A replica still on the old key alone cannot open it (roll the new key out as a second key first).
    const before = upstream.received.length;
    assert.equal((await postMcp(a.url, call(9), alice, sessionHeaders(fresh))).status, 404);
    assert.equal(upstream.received.length, before);
    assert.ok(refusals(a.logs).includes('session_key_unknown'));
  });

  it('holds no session per replica: the sessions gauge has nothing to count', async () => {
    assert.equal(a.gateway.proxy.sessions, undefined);
    const plain = await replica({});
    await initialize(plain.url, alice);
    assert.equal(plain.gateway.proxy.sessions, 1, 'unsealed, the replica holds the session');
  });
});

describe('sealed sessions and rate limits', { timeout: 60_000 }, () => {
  it('a secret without MCP_AUTH_RATE_LIMIT warns at start-up that nothing bounds a caller\'s upstream sessions, and how to fix it', async () => {
    const warningsOf = async (settings: Record<string, string>): Promise<string[]> => {
      const warnings: string[] = [];
      const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_RESOURCE: RESOURCE, HOST: '127.0.0.1', PORT: '0', ...settings });
      const gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
      gateways.push(gateway);
      return warnings.filter((line) => line.includes('MCP_AUTH_RATE_LIMIT'));
    };
    const unbounded = await warningsOf({ MCP_AUTH_SESSION_SECRET: secret() });
    assert.equal(unbounded.length, 1, unbounded.join('\n'));
    const line = JSON.parse(unbounded[0]!) as { event: string; message: string };
    assert.equal(line.event, 'warning');
    assert.match(line.message, /nothing bounds how many upstream sessions a caller opens/);
    assert.match(line.message, /set MCP_AUTH_RATE_LIMIT/);
    assert.deepEqual(await warningsOf({ MCP_AUTH_SESSION_SECRET: secret(), MCP_AUTH_RATE_LIMIT: '120/min' }), []);
    assert.deepEqual(await warningsOf({}), [], 'without a secret the per-process session limits apply');
  });
});

describe('sealed session ids for a token naming nobody', { timeout: 60_000 }, () => {
  it('the upstream\'s id is sealed (bound to the resource and issuer) and never reaches the client; it opens for no one', async () => {
    const issuer = await startTestIssuer();
    try {
      const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_RESOURCE: RESOURCE, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_SESSION_SECRET: secret() }), { log: () => {}, warn: () => {} });
      gateways.push(gateway);
      const nobody = await issuer.sign({ aud: RESOURCE });
      const id = await initialize(`${gateway.url}/mcp`, nobody);
      const upstreamId = upstream.issued.at(-1)!;
      assert.notEqual(id, upstreamId);
      assert.ok(!id.includes(upstreamId), 'the upstream\'s id is not handed out');
      assert.equal(decodeProtectedHeader(id).enc, 'A256GCM');
      const before = upstream.received.length;
      const answer = await postMcp(`${gateway.url}/mcp`, call(1), nobody, sessionHeaders(id));
      assert.equal(answer.status, 404, 'as unsealed: a session of nobody cannot be used');
      assert.equal(upstream.received.length, before, 'nothing is forwarded');
    } finally {
      await issuer.close();
    }
  });
});

describe('sealed session ids and a stdio upstream', { timeout: 60_000 }, () => {
  it('only the replica holding the process serves its session; another, or a restarted one, answers 404 and starts nothing', async () => {
    const key = secret();
    const command = `${quote(process.execPath)} ${quote(NODE_SERVER)}`;
    const start = async (): Promise<{ gateway: RunningGateway; url: string; logs: string[]; upstream: StdioUpstream }> => {
      const logs: string[] = [];
      const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM_COMMAND: command, MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_RESOURCE: RESOURCE, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_SESSION_SECRET: key });
      const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
      gateways.push(gateway);
      await gateway.guard.ready();
      return { gateway, url: `${gateway.url}/mcp`, logs, upstream: gateway.proxy as StdioUpstream };
    };
    const [a, b] = [await start(), await start()];
    const alice = await token('alice');
    const sealed = await initialize(a.url, alice);
    assert.equal(sealed.split('.').length, 5, 'a sealed id');
    const counter = async (url: string): Promise<HttpAnswer> => postMcp(url, call(1, 'counter_increment', {}), alice, sessionHeaders(sealed));
    const first = await counter(a.url);
    assert.equal(first.json?.result?.content?.[0]?.text, '1', first.text);

    const elsewhere = await counter(b.url);
    assert.equal(elsewhere.status, 404);
    assert.deepEqual(elsewhere.json, { jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Session not found' } });
    assert.equal(b.upstream.processes, 0, 'the other replica started no process');
    assert.deepEqual(childEvents(b.logs), []);
    assert.deepEqual(refusals(b.logs), ['session_other_instance']);
    // The holder's process saw nothing of it: its counter goes on from 1.
    assert.equal((await counter(a.url)).json?.result?.content?.[0]?.text, '2');
    // Another caller on the holding replica gets the same 404.
    const bob = await token('bob');
    assert.equal((await postMcp(a.url, call(2, 'counter_increment', {}), bob, sessionHeaders(sealed))).status, 404);
    // Its raw id (the process's session id) is no sealed id: refused too.
    assert.equal((await postMcp(a.url, call(3), alice, sessionHeaders('6a0c0b1e-0000-4000-8000-000000000000'))).status, 404);

    // The client re-initializes on whichever replica it reaches, and that session works there.
    const again = await initialize(b.url, alice);
    assert.equal((await postMcp(b.url, call(4, 'counter_increment', {}), alice, sessionHeaders(again))).json?.result?.content?.[0]?.text, '1');

    // A restarted replica holds none of its earlier processes.
    await a.gateway.shutdown();
    const restarted = await start();
    assert.equal((await counter(restarted.url)).status, 404);
    assert.equal(restarted.upstream.processes, 0);
    assert.deepEqual(refusals(restarted.logs), ['session_other_instance']);
  });
});

describe('sealed session ids and resumable stdio streams', { timeout: 60_000 }, () => {
  it('the SDK client resumes a stream it lost (GET with Last-Event-ID) through its sealed session id', async () => {
    const logs: string[] = [];
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}`,
      MCP_AUTH_ISSUER: as.issuer,
      MCP_AUTH_RESOURCE: RESOURCE,
      HOST: '127.0.0.1',
      PORT: '0',
      MCP_AUTH_SESSION_SECRET: secret(),
    });
    const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
    gateways.push(gateway);
    const dropping = droppingFetch('"ticks"', 2);
    const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${await token('carol')}` } },
      fetch: dropping.fetch,
      reconnectionOptions: { initialReconnectionDelay: 20, maxReconnectionDelay: 200, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
    });
    const client = new Client({ name: 'sealed-resume', version: '1.0.0' });
    client.onerror = () => {}; // the deliberate break is reported here
    await client.connect(transport);
    try {
      assert.equal(transport.sessionId?.split('.').length, 5, 'a sealed id');
      const progress: number[] = [];
      const result = await client.callTool({ name: 'ticks', arguments: { steps: 4, ms: 40 } }, undefined, { onprogress: (p) => void progress.push(p.progress), timeout: 20_000 });
      assert.equal(dropping.dropped(), true);
      assert.deepEqual(progress, [1, 2, 3, 4]);
      assert.deepEqual(result.content, [{ type: 'text', text: 'ticked 4 times' }]);
      assert.deepEqual(refusals(logs), [], 'the resume named the sealed id, and it opened');
      const resumed = logs.map((l) => JSON.parse(l) as { httpMethod?: string; status?: number }).filter((e) => e.httpMethod === 'GET' && e.status === 200);
      assert.ok(resumed.length > 0, 'the lost stream was resumed with a GET');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
});

describe('session secret settings', () => {
  const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'https://auth.example.com', HOST: '127.0.0.1', PORT: '0' };
  const refusal = (settings: Record<string, string>): ConfigurationError => {
    try {
      loadGatewayConfig({ ...base, ...settings });
    } catch (error) {
      assert.ok(error instanceof ConfigurationError, String(error));
      return error;
    }
    assert.fail('the settings were accepted');
  };

  it('refuses a secret that is not enough random bytes at start-up, saying how to make one', () => {
    for (const bad of ['changeme', randomBytes(31).toString('hex'), '0'.repeat(64)]) {
      const error = refusal({ MCP_AUTH_SESSION_SECRET: bad });
      assert.match(error.message, /MCP_AUTH_SESSION_SECRET/);
      assert.match(error.message, /openssl rand -base64 32/);
      assert.ok(!error.message.includes(bad), 'the secret is not repeated');
    }
  });

  it('reads the secret from a file, keys on lines or after commas, and refuses both a secret and a file', () => {
    const [first, second] = [secret(), secret()];
    const file = join(dir, 'session-secret');
    writeFileSync(file, `${first}\n${second}\n`);
    const config = loadGatewayConfig({ ...base, MCP_AUTH_SESSION_SECRET_FILE: file });
    assert.deepEqual(config.sessionSeal?.keys.map((k) => k.kid), parseSessionSecret(`${first},${second}`, 'S').map((k) => k.kid));
    assert.equal(config.sessionSeal?.maxAgeMs, 86_400_000);
    assert.equal(refusal({ MCP_AUTH_SESSION_SECRET_FILE: file, MCP_AUTH_SESSION_SECRET: first }).setting, 'MCP_AUTH_SESSION_SECRET_FILE');
    assert.equal(refusal({ MCP_AUTH_SESSION_SECRET_FILE: join(dir, 'missing') }).setting, 'MCP_AUTH_SESSION_SECRET_FILE');
  });

  it('takes a maximum age with a secret only, and refuses the per-process session limits it would make idle', () => {
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_SESSION_SECRET: secret(), MCP_AUTH_SESSION_MAX_AGE_MS: '3600000' }).sessionSeal?.maxAgeMs, 3_600_000);
    assert.equal(refusal({ MCP_AUTH_SESSION_MAX_AGE_MS: '3600000' }).setting, 'MCP_AUTH_SESSION_MAX_AGE_MS');
    assert.equal(refusal({ MCP_AUTH_SESSION_SECRET: secret(), MCP_AUTH_SESSION_MAX_AGE_MS: '10' }).setting, 'MCP_AUTH_SESSION_MAX_AGE_MS');
    for (const name of ['MCP_AUTH_MAX_SESSIONS', 'MCP_AUTH_MAX_SESSIONS_PER_CALLER', 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS']) {
      const error = refusal({ MCP_AUTH_SESSION_SECRET: secret(), [name]: '100' });
      assert.equal(error.setting, name);
      assert.match(error.message, /has no effect with a session secret/);
    }
    // Without a secret they work as before.
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_MAX_SESSIONS: '100' }).proxy?.maxSessions, 100);
    assert.equal(loadGatewayConfig(base).sessionSeal, undefined);
  });
});
