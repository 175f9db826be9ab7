// The audit trail through the node:http pipeline, on real HTTP with jose-signed tokens: exactly one record per
// decided request at 10,000 requests (allowed and denied) after a clean close, no token (nor a piece of one) in the
// file, arguments absent by default and redacted by JSON Pointer when on, rotation by size, OpenTelemetry log records,
// and records dropped and counted (never waited for) when the destination stalls.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { logs } from '@opentelemetry/api-logs';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { Registry } from 'prom-client';
import type { AuditOptions } from '../../src/core/audit/audit-options.js';
import type { AuditRecord } from '../../src/core/audit/audit-record.js';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { GuardOptions } from '../../src/core/guard/guard-options.js';
import { httpHandler } from '../../src/http/http-handler.js';
import { createRequestPipeline, type RequestPipeline } from '../../src/http/request-pipeline.js';
import { createGuardMetrics } from '../../src/metrics/guard-metrics.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { listenOnLoopback } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const V = { 'mcp-protocol-version': '2025-11-25' };
const POLICY = { tools: { refund: ['pay:write'], lookup: [] } };

let issuer: TestIssuer;
let dir: string;
let payer: string;
let reader: string;

before(async () => {
  issuer = await startTestIssuer();
  dir = mkdtempSync(join(tmpdir(), 'audit-trail-'));
  payer = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'console', scope: 'pay:write' });
  reader = await issuer.sign({ aud: RESOURCE, sub: 'bob', client_id: 'cli', scope: 'pay:read' });
});
after(async () => {
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A guarded endpoint whose handler answers each call, a JSON-RPC error for the tool `fail`. */
async function serve(audit: AuditOptions, extra: Partial<GuardOptions> = {}): Promise<{ url: string; pipeline: RequestPipeline; server: Server; stop(): Promise<void> }> {
  const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy: POLICY, audit, ...extra });
  const pipeline = createRequestPipeline(
    guard,
    httpHandler((req, res) => {
      const body = req.body as { id?: unknown; params?: { name?: string } };
      const answer = body.params?.name === 'fail' ? { error: { code: -32603, message: 'failed' } } : { result: { content: [] } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id ?? null, ...answer }));
    }),
  );
  const server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  const url = `${await listenOnLoopback(server)}/mcp`;
  const stop = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await pipeline.close();
  };
  return { url, pipeline, server, stop };
}

const call = (id: number, name: string, args: unknown = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const recordsIn = (path: string): AuditRecord[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditRecord);

/** Every piece of a token longer than 16 characters that appears in `text`, if any. */
function tokenPieceIn(text: string, tokens: readonly string[]): string | undefined {
  const WINDOW = 17;
  const pieces = new Set<string>();
  for (const token of tokens) for (let i = 0; i + WINDOW <= token.length; i++) pieces.add(token.slice(i, i + WINDOW));
  for (let i = 0; i + WINDOW <= text.length; i++) {
    const piece = text.slice(i, i + WINDOW);
    if (pieces.has(piece)) return piece;
  }
  return undefined;
}

describe('the audit trail in the request pipeline', () => {
  test('10,000 requests, allowed and denied: exactly one record each, by request id, and no token in the file', { timeout: 60_000 }, async () => {
    const file = join(dir, 'load.jsonl');
    const { url, stop } = await serve({ to: file });
    const TOTAL = 10_000;
    const CONCURRENCY = 50;
    // Each request's kind, by its index: allowed, refused for a scope, refused without a token, or an error answer.
    const kindOf = (i: number): 'allow' | 'scope' | 'none' | 'fail' => (['allow', 'scope', 'none', 'fail', 'allow'] as const)[i % 5]!;
    let next = 0;
    const statuses = new Map<string, number>();
    const worker = async (): Promise<void> => {
      while (next < TOTAL) {
        const i = next++;
        const kind = kindOf(i);
        const token = kind === 'none' ? undefined : kind === 'scope' ? reader : payer;
        const answer = await postMcp(url, call(i, kind === 'fail' ? 'fail' : kind === 'allow' ? 'lookup' : 'refund'), token, { ...V, 'x-request-id': `load-${i}` });
        statuses.set(`load-${i}`, answer.status);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    await stop();

    const text = readFileSync(file, 'utf8');
    const records = recordsIn(file);
    assert.equal(records.length, TOTAL);
    const byId = new Map(records.map((r) => [r.requestId, r]));
    assert.equal(byId.size, TOTAL, 'one record per request id');
    for (let i = 0; i < TOTAL; i++) {
      const record = byId.get(`load-${i}`);
      assert.ok(record, `a record for load-${i}`);
      assert.equal(record.status, statuses.get(`load-${i}`));
      const kind = kindOf(i);
      const expected = { allow: ['allow', 'allowed', 200], fail: ['allow', 'allowed', 200], scope: ['deny', 'scope_insufficient', 403], none: ['deny', 'token_missing', 401] }[kind];
      assert.deepEqual([record.decision, record.reason, record.status], expected, `load-${i}`);
      if (kind === 'fail') assert.equal(record.errorCode, -32603);
      if (kind === 'none') assert.equal(record.subject, undefined);
      if (kind === 'allow') {
        assert.equal(record.errorCode, undefined);
        assert.deepEqual([record.issuer, record.subject, record.clientId, record.method, record.tool], [issuer.issuer, 'alice', 'console', 'tools/call', 'lookup']);
      }
      assert.equal(record.arguments, undefined, 'arguments are never recorded by default');
      assert.equal(typeof record.durationMs, 'number');
    }
    assert.equal(tokenPieceIn(text, [payer, reader]), undefined, 'no piece of a token in the audit file');
    assert.doesNotMatch(text, /authorization|bearer|cookie/i);
  });

  test('arguments, when on, are redacted by JSON Pointer and bounded', async () => {
    const file = join(dir, 'arguments.jsonl');
    const { url, stop } = await serve({ to: file, arguments: true, redact: ['/password', '/card/number'], maxArgumentBytes: 256 });
    const args = { user: 'ana', password: 'hunter2-secret', card: { number: '4111111111111111', exp: '12/30' } };
    assert.equal((await postMcp(url, call(1, 'lookup', args), payer, { ...V, 'x-request-id': 'args-1' })).status, 200);
    assert.equal((await postMcp(url, call(2, 'lookup', { note: 'n'.repeat(1_000), password: 'p'.repeat(50) }), payer, { ...V, 'x-request-id': 'args-2' })).status, 200);
    assert.equal((await postMcp(url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, payer, { ...V, 'x-request-id': 'args-3' })).status, 200);
    await stop();
    const byId = new Map(recordsIn(file).map((r) => [r.requestId, r]));
    assert.deepEqual(byId.get('args-1')?.arguments, { user: 'ana', password: '[redacted]', card: { number: '[redacted]', exp: '12/30' } });
    const cut = byId.get('args-2')!;
    assert.equal(cut.arguments, undefined);
    assert.ok(cut.argumentsTruncated!.endsWith('…[truncated]'));
    assert.ok(Buffer.byteLength(cut.argumentsTruncated!) < 300);
    assert.equal(byId.get('args-3')?.arguments, undefined, 'only a tools/call carries arguments');
    const text = readFileSync(file, 'utf8');
    assert.ok(!text.includes('hunter2') && !text.includes('4111111111111111') && !text.includes('ppppp'), 'redacted values never show');
  });

  test('a file is rotated by size, keeping whole records in at most the files asked for', async () => {
    const file = join(dir, 'rotated.jsonl');
    const { url, stop } = await serve({ to: file, maxFileBytes: 4_096, files: 3 });
    for (let i = 0; i < 120; i++) await postMcp(url, call(i, 'lookup'), payer, { ...V, 'x-request-id': `rot-${i}` });
    await stop();
    const names = readdirSync(dir).filter((name) => name.startsWith('rotated.jsonl')).sort();
    assert.deepEqual(names, ['rotated.jsonl', 'rotated.jsonl.1', 'rotated.jsonl.2']);
    for (const name of names) assert.ok(statSync(join(dir, name)).size <= 4_096, `${name} is within the bound`);
    const ids = (name: string) => recordsIn(join(dir, name)).map((r) => Number(r.requestId.slice(4)));
    const [oldest, older, newest] = [ids('rotated.jsonl.2'), ids('rotated.jsonl.1'), ids('rotated.jsonl')];
    assert.ok(Math.max(...oldest) < Math.min(...older) && Math.max(...older) < Math.min(...newest), 'the newest records are in the file written, the oldest in the last copy');
    assert.equal(newest.at(-1), 119, 'the last record was written');
  });

  test('with otel, each record is an OpenTelemetry log record of the registered logger provider', async () => {
    const exporter = new InMemoryLogRecordExporter();
    const provider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter })] });
    logs.setGlobalLoggerProvider(provider);
    try {
      const { url, stop } = await serve({ to: 'otel' });
      assert.equal((await postMcp(url, call(1, 'refund'), payer, { ...V, 'x-request-id': 'otel-1' })).status, 200);
      assert.equal((await postMcp(url, call(2, 'refund'), reader, { ...V, 'x-request-id': 'otel-2' })).status, 403);
      await stop();
      // The processor hands records to its exporter asynchronously.
      await provider.forceFlush();
      const records = exporter.getFinishedLogRecords();
      assert.equal(records.length, 2);
      const [allowed, denied] = records;
      assert.equal(allowed!.eventName, 'mcp_guard.audit');
      assert.equal(allowed!.instrumentationScope.name, 'mcp-oauth-guard');
      assert.deepEqual([allowed!.attributes['requestId'], allowed!.attributes['decision'], allowed!.attributes['tool'], allowed!.attributes['subject']], ['otel-1', 'allow', 'refund', 'alice']);
      assert.deepEqual([denied!.attributes['decision'], denied!.attributes['reason'], denied!.attributes['status']], ['deny', 'scope_insufficient', 403]);
      assert.equal(tokenPieceIn(JSON.stringify(records.map((r) => [r.body, r.attributes])), [payer, reader]), undefined);
    } finally {
      logs.disable();
      await provider.shutdown();
    }
  });

  test('a destination that stalls: requests are still answered, and records past the buffer are dropped and counted', async () => {
    const registry = new Registry();
    const metrics = createGuardMetrics({ registry });
    let release: () => void = () => {};
    const stalled = new Promise<void>((resolve) => (release = resolve));
    const written: string[] = [];
    const warnings: string[] = [];
    const sink = {
      write: async (lines: string) => {
        await stalled;
        written.push(lines);
      },
    };
    const { url, stop } = await serve({ to: sink, bufferBytes: 65_536 }, { onAuditDropped: metrics.hooks.onAuditDropped, logger: { info: () => {}, warn: (line) => warnings.push(line) } });
    const TOTAL = 400;
    for (let i = 0; i < TOTAL; i += 20) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, k) => postMcp(url, call(i + k, 'lookup'), payer, V)));
      assert.ok(answers.every((a) => a.status === 200), 'answered while the destination stalls');
    }
    const dropped = (await registry.getSingleMetricAsString('mcp_guard_audit_dropped_total')).match(/^mcp_guard_audit_dropped_total (\d+)$/m)?.[1];
    assert.ok(Number(dropped) > 0, `records were dropped and counted (${dropped})`);
    assert.equal(warnings.length, 1, 'one warning, however many drops');
    assert.match(warnings[0]!, /"message":"audit records dropped: the audit destination is not keeping up and its buffer is full"/);
    release();
    await stop();
    const kept = written.join('').split('\n').filter(Boolean).length;
    assert.equal(kept + Number(dropped), TOTAL, 'every record was either written or counted as dropped');
  });
});
