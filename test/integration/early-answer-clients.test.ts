// Answers given while a large body is still arriving (413, a refused Origin, 431 from Node's parser) reach real
// Node clients, `fetch` (undici) and `node:http`, each in a process of its own sending at full speed: through the
// notes example (Express adapter) and through the gateway. Closing with the rest of the body unread made the
// kernel reset the connection, and both clients failed with EPIPE/ECONNRESET without reading the answer.
import assert from 'node:assert/strict';
import { execFile } from '../helpers/child-process.js';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/core/guard/resolve-guard-options.js';
import { lingeringConnections } from '../../src/http/lingering-close.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const CLIENT = fileURLToPath(new URL('../helpers/large-body-client.mjs', import.meta.url));
/**
 * Six times the default body limit: more than the loopback socket buffers take in at once, so the client is still
 * writing when the answer comes (with 2 MB the old code failed on some machines only), and within the bytes a
 * lingering close reads (8 MiB).
 */
const BODY_BYTES = 6 * 1024 * 1024;
const ATTEMPTS = 3;
const TOO_LARGE = { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Request body larger than ${DEFAULT_MAX_BODY_BYTES} bytes` } };

interface ClientOutcome {
  status?: number;
  connection?: string | null;
  text?: string;
  error?: string;
}

/** Runs `ATTEMPTS` requests with `kind` in a child process and returns what each one read. */
async function runClient(url: string, kind: 'fetch' | 'http', headers: Record<string, string> = {}, framing = 'length'): Promise<ClientOutcome[]> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLIENT, url, kind, String(ATTEMPTS), String(BODY_BYTES), JSON.stringify(headers), framing], {
    timeout: 60_000,
  });
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as ClientOutcome);
}

/** Every attempt read exactly `status`, `Connection: close` and the JSON-RPC error `body`, and got no error. */
function assertAnswered(outcomes: ClientOutcome[], status: number, body: (json: any) => void): void {
  assert.equal(outcomes.length, ATTEMPTS);
  for (const outcome of outcomes) {
    assert.equal(outcome.error, undefined, `the client read the answer, not a broken connection: ${outcome.error}`);
    assert.equal(outcome.status, status);
    assert.equal(outcome.connection, 'close');
    body(JSON.parse(outcome.text ?? ''));
  }
}

const tooLarge = (json: any): void => assert.deepEqual(json, TOO_LARGE);

describe('early answers reach fetch and node:http clients still sending a large body', () => {
  let issuer: TestIssuer;
  let notes: RunningNotesServer;
  let upstream: Server;
  let gateway: RunningGateway;

  before(async () => {
    issuer = await startTestIssuer();
    notes = await startNotesServer({ issuer: issuer.issuer });
    // Never reached: every request here is refused before it is forwarded.
    upstream = createServer((_req, res) => res.writeHead(500).end());
    const upstreamUrl = await listenOnLoopback(upstream);
    gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: `${upstreamUrl}/mcp`, MCP_AUTH_ISSUER: issuer.issuer, PORT: '0' }), { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    await notes?.close();
    closeServer(upstream);
    await issuer?.close();
  });

  for (const kind of ['fetch', 'http'] as const) {
    it(`413 through the Express adapter (notes example), ${kind}`, { timeout: 90_000 }, async () => {
      assertAnswered(await runClient(notes.url, kind), 413, tooLarge);
    });

    it(`413 through the gateway, ${kind}`, { timeout: 90_000 }, async () => {
      assertAnswered(await runClient(gateway.resource, kind), 413, tooLarge);
    });

    it(`413 for a chunked body growing past the limit, through the gateway, ${kind}`, { timeout: 90_000 }, async () => {
      assertAnswered(await runClient(gateway.resource, kind, {}, 'chunked'), 413, tooLarge);
    });

    it(`403 for a refused Origin, answered before the body is read, through the gateway, ${kind}`, { timeout: 90_000 }, async () => {
      assertAnswered(await runClient(gateway.resource, kind, { origin: 'https://evil.example' }), 403, (json) => {
        assert.equal(json.jsonrpc, '2.0');
        assert.equal(json.error.code, -32600);
        assert.match(json.error.message, /Origin/);
      });
    });

    it(`431 from Node's parser (headers too large), through the gateway, ${kind}`, { timeout: 90_000 }, async () => {
      assertAnswered(await runClient(gateway.resource, kind, { 'x-padding': 'p'.repeat(20_000) }), 431, (json) => {
        assert.deepEqual(json, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: 'Request Header Fields Too Large: the request headers are over the limit; send fewer or shorter headers' },
        });
      });
    });
  }

  it('no connection is left lingering', async () => {
    assert.equal(lingeringConnections(), 0);
  });
});
