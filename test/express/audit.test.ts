// The audit trail through the Express middleware, configured from the environment (MCP_AUTH_AUDIT), as an
// application would: a record per decided request, none for the application's own routes, all of them in the file
// once the router is closed, and no token in it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import express from 'express';
import type { AuditRecord } from '../../src/core/audit/audit-record.js';
import { dispatchTable } from '../../src/core/mcp/dispatch-table.js';
import { loadOptionsFromEnv } from '../../src/core/guard/load-options-from-env.js';
import { mcpOAuthGuard, type McpOAuthGuardRouter } from '../../src/express/mcp-oauth-guard.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp, send } from '../helpers/http-client.js';
import { listenOnLoopback } from '../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
let issuer: TestIssuer;
let dir: string;
let server: Server | undefined;

before(async () => {
  issuer = await startTestIssuer();
  dir = mkdtempSync(join(tmpdir(), 'express-audit-'));
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the middleware writes one record per decided request, and every one by router.close()', async () => {
  const file = join(dir, 'audit.jsonl');
  const options = loadOptionsFromEnv({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_RESOURCE: RESOURCE, MCP_AUTH_AUDIT: file, MCP_AUTH_LOG_LEVEL: 'off' });
  const router: McpOAuthGuardRouter = mcpOAuthGuard({
    ...options,
    policy: { tools: { notes_delete: ['notes:admin'] } },
    handler: dispatchTable({ 'tools/call': () => ({ content: [] }) }),
  });
  const app = express();
  app.use(router);
  app.get('/health', (_req, res) => void res.send('ok'));
  server = createServer(app);
  const origin = await listenOnLoopback(server);
  const token = await issuer.sign({ aud: RESOURCE, sub: 'carol', client_id: 'notes-app', scope: 'notes:read' });
  const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { body: 'secret body' } } });
  const V = { 'mcp-protocol-version': '2025-11-25' };
  const answers = await Promise.all([
    postMcp(`${origin}/mcp`, call(1, 'notes_add'), token, { ...V, 'x-request-id': 'ex-1' }),
    postMcp(`${origin}/mcp`, call(2, 'notes_delete'), token, { ...V, 'x-request-id': 'ex-2' }),
    postMcp(`${origin}/mcp`, call(3, 'notes_add'), 'not-a-token', { ...V, 'x-request-id': 'ex-3' }),
    send(`${origin}/health`, { method: 'GET' }),
  ]);
  assert.deepEqual(answers.map((a) => a.status), [200, 403, 401, 200]);
  await new Promise<void>((resolve) => server!.close(() => resolve()));
  await router.close();

  const text = readFileSync(file, 'utf8');
  const records = text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as AuditRecord);
  assert.deepEqual(records.map((r) => r.requestId).sort(), ['ex-1', 'ex-2', 'ex-3'], 'one record per decided request; none for the application route');
  const byId = new Map(records.map((r) => [r.requestId, r]));
  assert.deepEqual([byId.get('ex-1')!.decision, byId.get('ex-1')!.subject, byId.get('ex-1')!.tool], ['allow', 'carol', 'notes_add']);
  assert.deepEqual([byId.get('ex-2')!.reason, byId.get('ex-2')!.status], ['scope_insufficient', 403]);
  assert.deepEqual([byId.get('ex-3')!.reason, byId.get('ex-3')!.status, byId.get('ex-3')!.subject], ['token_invalid', 401, undefined]);
  assert.ok(!text.includes(token.slice(-20)) && !text.includes('not-a-token') && !text.includes('secret body'), 'no token and no arguments');
});
