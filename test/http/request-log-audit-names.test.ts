// The request log's `name` and the audit record's `tool`, `prompt` or `resource` are one value under two names, on
// real HTTP with jose-signed tokens: for each kind of target, the log line of a request and its record (joined on
// requestId) carry the same value, and the audit page, where both are described, says so.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { httpHandler } from '../../src/http/http-handler.js';
import { createRequestLog } from '../../src/http/request-log.js';
import { createRequestPipeline, type RequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, servePipeline } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('request log name and audit target', () => {
  let issuer: TestIssuer;
  let pipeline: RequestPipeline;
  let server: Server;
  let url: string;
  let token: string;
  const logLines: string[] = [];
  let records = '';

  before(async () => {
    issuer = await startTestIssuer();
    token = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'console', scope: 'notes:read' });
    const log = createRequestLog({ write: (line) => void logLines.push(line) });
    const guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, onDecision: log.onDecision, audit: { to: { write: (lines) => void (records += lines), close: () => {} } } });
    pipeline = createRequestPipeline(
      guard,
      httpHandler((req, res) => {
        const id = (req.body as { id?: unknown }).id ?? null;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: {} }));
      }),
    );
    ({ server, url } = await servePipeline(pipeline));
    const serve = server.listeners('request')[0] as (...args: unknown[]) => void;
    server.removeAllListeners('request');
    server.on('request', (req, res) => log.middleware(req, res, () => serve(req, res)));
  });
  after(async () => {
    if (server) closeServer(server);
    await pipeline?.close();
    await issuer?.close();
  });

  test('tools/call, prompts/get and resources/read: the log line\'s name is the record\'s tool, prompt or resource', async () => {
    const calls = [
      { method: 'tools/call', params: { name: 'search' }, field: 'tool', value: 'search' },
      { method: 'prompts/get', params: { name: 'summary' }, field: 'prompt', value: 'summary' },
      { method: 'resources/read', params: { uri: 'notes://alice/1' }, field: 'resource', value: 'notes://alice/1' },
    ];
    for (const [i, c] of calls.entries()) {
      const answer = await postMcp(url, { jsonrpc: '2.0', id: i + 1, method: c.method, params: c.params }, token);
      assert.equal(answer.status, 200);
    }
    await pipeline.close();
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const byId = new Map(records.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).map((r) => [r.requestId, r]));
    for (const c of calls) {
      const line = lines.find((l) => l.method === c.method)!;
      const record = byId.get(line.requestId)!;
      assert.equal(line.name, c.value, c.method);
      assert.equal(record[c.field], c.value, c.method);
      assert.ok(!('name' in record) && !(c.field in line), 'each keeps its own field name');
    }
  });

  test('the audit page, where both are described, says that name is the same value', () => {
    const page = readFileSync(new URL('../../docs/audit.md', import.meta.url), 'utf8');
    const row = page.split('\n').find((line) => line.startsWith('| `tool`, `prompt`, `resource` |')) ?? '';
    assert.match(row, /The request log and `onDecision` call the same value `name`/);
    assert.match(row, /a record's `tool` is the `name` of the request's log line/);
  });
});
