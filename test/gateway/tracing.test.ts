// OpenTelemetry spans of real requests through a real gateway: none, and no error, while no SDK is registered;
// then, with the SDK's in-memory exporter, the request's SERVER span, its steps, the upstream CLIENT span and
// the calls to the authorization server, following the MCP and HTTP semantic conventions.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { TRACER_NAME } from '../../src/core/kernel/tracing.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { postMcp } from '../helpers/http-client.js';

/** An upstream answering every request with an empty result, remembering the `traceparent` each one carried. */
function startUpstream(): Promise<{ server: Server; url: string; traceparents: (string | undefined)[] }> {
  const traceparents: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    traceparents.push(req.headers.traceparent as string | undefined);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number };
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } }));
    });
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, traceparents }));
}

describe('tracing', () => {
  let as: AuthorizationServer;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  const exporter = new InMemorySpanExporter();
  const gateways: RunningGateway[] = [];

  const start = async (): Promise<{ gateway: RunningGateway; token: string }> => {
    const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_ISSUER: as.issuer, PORT: '0' }), { log: () => {}, warn: () => {} });
    gateways.push(gateway);
    as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
    return { gateway, token: await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'user-7' }) };
  };
  const call = (gateway: RunningGateway, token: string | undefined, headers: Record<string, string> = {}) =>
    postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'notes_add', arguments: {} } }, token, { 'mcp-protocol-version': '2025-11-25', ...headers });

  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
    upstream = await startUpstream();
  });
  after(async () => {
    for (const gateway of gateways) await gateway.shutdown();
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('with no SDK registered, serves as usual, records nothing and sends no trace context upstream', async () => {
    assert.equal(trace.getTracer(TRACER_NAME).startSpan('probe').isRecording(), false);
    const { gateway, token } = await start();
    assert.equal((await call(gateway, token)).status, 200);
    assert.equal((await call(gateway, undefined)).status, 401);
    assert.deepEqual(upstream.traceparents, [undefined]);
  });

  describe('with an SDK registered', () => {
    let gateway: RunningGateway;
    let token: string;
    const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
    /** Waits for a span the request ends after its answer was sent. */
    const finished = async (match: (s: ReadableSpan) => boolean): Promise<ReadableSpan> => {
      for (;;) {
        const found = spans().find(match);
        if (found) return found;
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const childrenOf = (parent: ReadableSpan): ReadableSpan[] => spans().filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

    before(async () => {
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      assert.equal(exporter.getFinishedSpans().length, 0, 'nothing was recorded before the SDK');
      ({ gateway, token } = await start());
      upstream.traceparents.length = 0;
    });

    it("makes a tools/call a SERVER span in the client's trace, with its steps, the upstream call and the key fetch", async () => {
      const clientTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const clientSpanId = '00f067aa0ba902b7';
      assert.equal((await call(gateway, token, { traceparent: `00-${clientTraceId}-${clientSpanId}-01` })).status, 200);
      const server = await finished((s) => s.kind === SpanKind.SERVER && s.name === 'tools/call notes_add');
      assert.equal(server.spanContext().traceId, clientTraceId);
      assert.equal(server.parentSpanContext?.spanId, clientSpanId);
      assert.equal(server.instrumentationScope.name, TRACER_NAME);
      assert.deepEqual(
        { ...server.attributes },
        {
          'http.request.method': 'POST',
          'http.route': '/mcp',
          'network.transport': 'tcp',
          'network.protocol.name': 'http',
          'network.protocol.version': '1.1',
          'jsonrpc.protocol.version': '2.0',
          'jsonrpc.request.id': '2',
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': 'notes_add',
          'gen_ai.operation.name': 'execute_tool',
          'mcp_guard.decision': 'allow',
          'mcp_guard.reason': 'allowed',
          'http.response.status_code': 200,
        },
      );
      assert.notEqual(server.status.code, SpanStatusCode.ERROR);

      const steps = childrenOf(server);
      assert.deepEqual(steps.map((s) => s.name).sort(), ['mcp_guard.authorize', 'mcp_guard.handle', 'mcp_guard.verify_token']);
      assert.ok(steps.every((s) => s.kind === SpanKind.INTERNAL));
      const verify = steps.find((s) => s.name === 'mcp_guard.verify_token')!;
      const [jwks] = childrenOf(verify);
      assert.equal(jwks?.kind, SpanKind.CLIENT);
      assert.equal(jwks?.name, 'GET');
      assert.equal(jwks?.attributes['mcp_guard.call'], 'jwks');
      assert.equal(jwks?.attributes['http.response.status_code'], 200);
      assert.equal(new URL(String(jwks?.attributes['url.full'])).origin, new URL(as.issuer).origin);

      const handle = steps.find((s) => s.name === 'mcp_guard.handle')!;
      const [client] = childrenOf(handle);
      assert.equal(client?.kind, SpanKind.CLIENT);
      assert.equal(client?.name, 'tools/call notes_add');
      assert.equal(client?.attributes['url.full'], upstream.url);
      assert.equal(client?.attributes['server.address'], '127.0.0.1');
      assert.equal(client?.attributes['http.response.status_code'], 200);
      assert.equal(client?.attributes['mcp.method.name'], 'tools/call');
      // The upstream continues the trace from the CLIENT span.
      assert.deepEqual(upstream.traceparents, [`00-${clientTraceId}-${client!.spanContext().spanId}-01`]);

      const discovery = spans().find((s) => s.attributes['mcp_guard.call'] === 'discovery');
      assert.equal(discovery?.kind, SpanKind.CLIENT, 'start-up discovery is traced too');

      // Identifiers and credentials are not attributes.
      const values = JSON.stringify(spans().map((s) => s.attributes));
      assert.ok(!values.includes(token) && !values.includes('user-7'));
    });

    it('records a refusal: the reason, the JSON-RPC error code and an error status, and no upstream call', async () => {
      exporter.reset();
      assert.equal((await call(gateway, undefined)).status, 401);
      const server = await finished((s) => s.kind === SpanKind.SERVER);
      assert.equal(server.name, 'tools/call notes_add');
      assert.equal(server.attributes['mcp_guard.decision'], 'deny');
      assert.equal(server.attributes['mcp_guard.reason'], 'token_missing');
      assert.equal(server.attributes['http.response.status_code'], 401);
      assert.match(String(server.attributes['rpc.response.status_code']), /^-\d+$/);
      assert.equal(server.attributes['error.type'], server.attributes['rpc.response.status_code']);
      assert.equal(server.status.code, SpanStatusCode.ERROR);
      const verify = childrenOf(server).find((s) => s.name === 'mcp_guard.verify_token');
      assert.equal(verify?.attributes['error.type'], 'token_missing');
      assert.ok(!spans().some((s) => s.kind === SpanKind.CLIENT && s.name.startsWith('tools/call')));
    });

    it('names a method MCP does not define _OTHER, so that clients cannot mint span names', async () => {
      exporter.reset();
      const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 5, method: 'x/anything-at-all' }, token, { 'mcp-protocol-version': '2025-11-25' });
      assert.equal(answer.status, 200);
      const server = await finished((s) => s.kind === SpanKind.SERVER);
      assert.equal(server.name, '_OTHER');
      assert.equal(server.attributes['mcp.method.name'], 'x/anything-at-all');
    });
  });
});
