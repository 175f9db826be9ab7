// Seeded random traffic through the gateway, against a raw node:http upstream that records every message it
// receives. Whatever the sequence, four things hold:
// - no answer carries an item the caller may not see, whatever request (and id) it came back on;
// - no request id reaches the upstream while a request of the same session with that id is still pending there;
// - every mirrored header that reaches the upstream (`Mcp-Method`, `Mcp-Name`) describes the message it came with;
// - distinct callers reach the upstream with distinct identity headers, and plain ones exactly as they are.
// Never a 5xx, never a hang. A failure prints its seed: FUZZ_SEED=<seed> replays it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { messages, postMcp, type HttpAnswer } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';
import { prng } from '../helpers/prng.js';

const VERSION = '2025-11-25';
const SEED = Number(process.env['FUZZ_SEED'] ?? 20_261_203);
const OPERATIONS = 240;
const CONCURRENCY = 6;

/** Everything a caller with only `basic` must never see, in any answer. */
const HIDDEN = ['secret_admin', 'secret_prompt', 'docs://private/plan', 'docs://private/{id}'];

const POLICY = {
  scopesSupported: ['basic', 'admin'],
  requiredScopes: ['basic'],
  tools: { public_tool: ['basic'], '*': ['admin'] },
  prompts: { hello: ['basic'], '*': ['admin'] },
  resources: { 'docs://public/{id}': ['basic'], '*': ['admin'] },
};

/** List-shaped results the upstream answers with, on whatever request it was sent. */
const LISTS: Record<string, unknown>[] = [
  { tools: [{ name: 'public_tool', inputSchema: { type: 'object' } }, { name: 'secret_admin', inputSchema: { type: 'object' } }] },
  { resources: [{ uri: 'docs://public/a', name: 'a' }, { uri: 'docs://private/plan', name: 'plan' }] },
  { resourceTemplates: [{ uriTemplate: 'docs://public/{id}', name: 'pub' }, { uriTemplate: 'docs://private/{id}', name: 'priv' }] },
  { prompts: [{ name: 'hello' }, { name: 'secret_prompt' }] },
  { content: [{ type: 'text', text: 'ok' }] },
];

/**
 * The callers: each distinct from every other by subject or by scopes. The gateway used to strip what a
 * header cannot carry, which merged the first four into one subject and the last two into one scope list.
 */
const CALLERS: Array<{ name: string; claims: Record<string, unknown> }> = [
  { name: 'plain', claims: { sub: 'alice@example.com', scope: 'basic' } },
  { name: 'cyrillic', claims: { sub: 'alice\u0416@example.com', scope: 'basic' } },
  { name: 'zero-width', claims: { sub: 'ali\u200bce@example.com', scope: 'basic' } },
  { name: 'line separator', claims: { sub: 'alice@example.com\u2028', scope: 'basic' } },
  { name: 'scope with a space', claims: { sub: 'carol', scp: ['basic', 'x admin'] } },
  { name: 'scope with a non-ASCII letter', claims: { sub: 'carol', scope: 'basic x admin\u0416' } },
  { name: 'bob', claims: { sub: 'bob', scope: 'basic' } },
];


interface Received {
  headers: IncomingHttpHeaders;
  message: Record<string, any>;
}

describe(`gateway fuzz (seed ${SEED})`, () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  let dir: string;
  const received: Received[] = [];
  /** Ids in flight at the upstream, by session. */
  const inFlight = new Map<string, Set<string>>();
  const violations: string[] = [];
  let sessions = 0;
  let answers = 0;

  before(async () => {
    issuer = await startTestIssuer();
    upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let message: Record<string, any>;
        try {
          message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, any>;
        } catch {
          violations.push('the upstream received a body that is not JSON');
          res.writeHead(400).end();
          return;
        }
        received.push({ headers: req.headers, message });
        if (message['method'] === 'initialize') {
          const text = JSON.stringify({ jsonrpc: '2.0', id: message['id'], result: { protocolVersion: VERSION, capabilities: { tools: {}, prompts: {}, resources: {} }, serverInfo: { name: 'fuzz', version: '1' } } });
          res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `session-${++sessions}` }).end(text);
          return;
        }
        if (!('method' in message) || !('id' in message)) {
          res.writeHead(202).end();
          return;
        }
        const session = String(req.headers['mcp-session-id'] ?? '');
        const key = JSON.stringify(message['id']);
        const pending = inFlight.get(session) ?? new Set<string>();
        inFlight.set(session, pending);
        if (pending.has(key)) violations.push(`id ${key} reached the upstream twice at once in ${session}`);
        pending.add(key);
        // Any answer may have a list's shape: an upstream that moves an id to another stream, or replays an old
        // answer, sends exactly that.
        const result = LISTS[answers++ % LISTS.length];
        const text = JSON.stringify({ jsonrpc: '2.0', id: message['id'], result });
        const sse = answers % 2 === 0;
        setTimeout(() => {
          pending.delete(key);
          if (sse) res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${text}\n\n`);
          else res.writeHead(200, { 'content-type': 'application/json' }).end(text);
        }, answers % 7);
      });
    });
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    dir = mkdtempSync(join(tmpdir(), 'gateway-fuzz-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(POLICY));
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: upstreamUrl,
      MCP_AUTH_ISSUER: issuer.issuer,
      MCP_AUTH_POLICY: policyFile,
      MCP_AUTH_IDENTITY_HEADERS: 'on',
      PORT: '0',
    });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('random traffic keeps every rule', async () => {
    const random = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const context = (what: string): string => `${what} (FUZZ_SEED=${SEED})`;

    // Each caller signs in and opens a session of its own.
    const callers = await Promise.all(
      CALLERS.map(async (caller, index) => {
        const token = await issuer.sign({ aud: gateway.resource, client_id: 'fuzz-client', ...caller.claims });
        const init = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' }, _meta: { caller: index } } }, token, { 'mcp-protocol-version': VERSION });
        assert.equal(init.status, 200, context(`${caller.name}: initialize: ${init.text}`));
        const session = String(init.headers['mcp-session-id'] ?? '');
        assert.notEqual(session, '', context(`${caller.name}: a session id`));
        const headers = { 'mcp-protocol-version': VERSION, 'mcp-session-id': session };
        const done = await postMcp(gateway.resource, { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: { caller: index } } }, token, headers);
        assert.equal(done.status, 202, context(`${caller.name}: initialized: ${done.text}`));
        return { ...caller, index, token, headers };
      }),
    );

    const requests: Array<() => { method: string; params: Record<string, unknown>; name?: string }> = [
      () => ({ method: 'tools/list', params: {} }),
      () => ({ method: 'resources/list', params: {} }),
      () => ({ method: 'resources/templates/list', params: {} }),
      () => ({ method: 'prompts/list', params: {} }),
      () => ({ method: 'tools/call', params: { name: 'public_tool', arguments: {} }, name: 'public_tool' }),
      () => ({ method: 'prompts/get', params: { name: 'hello' }, name: 'hello' }),
      () => ({ method: 'resources/read', params: { uri: 'docs://public/a' }, name: 'docs://public/a' }),
      () => ({ method: 'ping', params: {} }),
    ];
    const lies = ['tools/call', 'prompts/get', 'resources/read', 'tools/list', 'ping'];
    const lyingNames = ['secret_admin', 'docs://private/plan', 'public_tool', 'secret_prompt'];

    const operation = async (): Promise<void> => {
      const caller = pick(callers);
      const meta = { caller: caller.index };
      const kind = random();
      let answer: HttpAnswer;
      if (kind < 0.2) {
        // A client response, with mirrored headers it has no business carrying.
        const headers: Record<string, string> = { ...caller.headers, 'mcp-method': pick(lies) };
        if (random() < 0.7) headers['mcp-name'] = pick(lyingNames);
        answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: Math.floor(random() * 4), result: { _meta: meta } }, caller.token, headers);
        assert.ok([202, 400].includes(answer.status), context(`a client response: ${answer.status} ${answer.text}`));
      } else {
        // A request, its id from a handful that concurrent operations share; sometimes headers that lie.
        const { method, params, name } = pick(requests)();
        const headers: Record<string, string> = { ...caller.headers };
        if (random() < 0.5) headers['mcp-method'] = random() < 0.7 ? method : pick(lies);
        if (random() < 0.4) headers['mcp-name'] = random() < 0.6 && name !== undefined ? name : pick(lyingNames);
        const id = random() < 0.5 ? Math.floor(random() * 3) : `r${Math.floor(random() * 3)}`;
        answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }, caller.token, headers);
        assert.ok([200, 400, 403, 409, 429].includes(answer.status), context(`${method}: ${answer.status} ${answer.text}`));
      }
      // Results only: an error may quote what the client itself sent.
      const results = JSON.stringify(messages(answer).map((m: { result?: unknown }) => m.result ?? null));
      for (const hidden of HIDDEN) assert.ok(!results.includes(hidden), context(`${hidden} reached ${caller.name}: ${answer.text}`));
    };

    for (let done = 0; done < OPERATIONS; done += CONCURRENCY) {
      await Promise.all(Array.from({ length: CONCURRENCY }, operation));
    }

    assert.deepEqual(violations, [], context('upstream-side rules'));
    assert.ok(received.length > OPERATIONS / 3, context(`enough traffic reached the upstream (${received.length})`));

    // Mirrored headers describe the message they came with.
    for (const { headers, message } of received) {
      const method = headers['mcp-method'];
      if (method !== undefined) assert.equal(method, message['method'], context(`Mcp-Method ${String(method)} on ${JSON.stringify(message)}`));
      const name = headers['mcp-name'];
      if (name !== undefined) {
        const target = message['params']?.['name'] ?? message['params']?.['uri'];
        assert.equal(name, target, context(`Mcp-Name ${String(name)} on ${JSON.stringify(message)}`));
      }
    }

    // Identity headers: one fingerprint per caller, never shared; plain identities exactly as they are.
    const callerOf = new Map<string, number>();
    for (const { headers, message } of received) {
      const index = message['params']?.['_meta']?.['caller'] ?? message['result']?.['_meta']?.['caller'];
      if (typeof index !== 'number') continue;
      const fingerprint = JSON.stringify(
        Object.keys(headers)
          .filter((h) => h.startsWith('x-mcp-'))
          .sort()
          .map((h) => [h, headers[h]]),
      );
      const seen = callerOf.get(fingerprint);
      if (seen === undefined) callerOf.set(fingerprint, index);
      else assert.equal(CALLERS[seen]!.name, CALLERS[index]!.name, context(`two callers reached the upstream as ${fingerprint}`));
      if (CALLERS[index]!.name === 'plain') {
        assert.equal(headers['x-mcp-subject'], 'alice@example.com');
        assert.equal(headers['x-mcp-scopes'], 'basic');
      }
      if (CALLERS[index]!.name === 'bob') assert.equal(headers['x-mcp-subject'], 'bob');
    }
    assert.ok(callerOf.size >= 5, context(`most callers reached the upstream (${callerOf.size})`));
  });
});
