// The middleware's metrics helper: the guard's hooks feeding an application's own prom-client registry, with
// real tokens through the Express adapter on 127.0.0.1.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { ConfigurationError, dispatchTable } from '../../src/index.js';
import { createGuardMetrics, MAX_TOOL_LABELS, type GuardMetrics } from '../../src/metrics/index.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp } from '../helpers/http-client.js';

describe('createGuardMetrics', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;
  let token: string;
  const registry = new Registry();
  let metrics: GuardMetrics;
  const ownDecisions: string[] = [];
  const handler = dispatchTable({ 'tools/call': () => ({ content: [] }), 'tools/list': () => ({ tools: [] }) });

  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['x:read', 'x:write'] });
    metrics = createGuardMetrics({ registry, toolLabels: ['echo', '*'] });
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: { tools: { echo: [], write_note: ['x:write'] } },
      ...metrics.hooks,
      // An application's own hook, chained to the helper's.
      onDecision: (event) => {
        ownDecisions.push(event.reason);
        metrics.onDecision(event);
      },
      handler,
    }));
    as.addResource(app.url, { scopes: ['x:read', 'x:write'] });
    token = await as.issueAccessToken({ resource: app.url, scope: 'x:read', sub: 'alice' });
  });
  after(async () => {
    await app?.close();
    await as?.close();
  });

  it("counts decisions, verifications and JWKS fetches in the application's registry", async () => {
    const call = (name: string, id: number) => postMcp(app.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name } }, token);
    assert.equal((await call('echo', 1)).status, 200);
    assert.equal((await call('echo', 2)).status, 200);
    assert.equal((await call('write_note', 3)).status, 403);
    for (let i = 0; i < 30; i++) assert.equal((await call(`flood_${i}`, 10 + i)).status, 200);
    assert.equal((await postMcp(app.url, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, 'not-a-jwt')).status, 401);

    const json = await registry.getMetricsAsJSON();
    const metric = (name: string) => json.find((m) => m.name === name)!.values;
    const requests = metric('mcp_guard_requests_total');
    const count = (labels: Record<string, string>) => requests.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
    assert.equal(count({ method: 'tools/call', decision: 'allow', reason: 'allowed', tool: 'echo' }), 2);
    assert.equal(count({ method: 'tools/call', decision: 'deny', reason: 'scope_insufficient', tool: 'other' }), 1);
    assert.equal(count({ method: 'tools/call', decision: 'allow', reason: 'allowed', tool: 'other' }), 30);
    assert.equal(count({ method: 'tools/list', decision: 'deny', reason: 'token_invalid', tool: '' }), 1);
    assert.deepEqual([...new Set(requests.map((v) => v.labels.tool))].sort(), ['', 'echo', 'other'], 'the flood added no label value');
    assert.equal(ownDecisions.length, 34, 'the application hook saw every decision');

    const verifications = metric('mcp_guard_token_verifications_total');
    const result = (r: string) => verifications.find((v) => v.labels.result === r)?.value;
    // A JWT is cached on its second use.
    assert.equal(result('verified'), 2);
    assert.equal(result('cache_hit'), 31);
    assert.equal(result('refused'), 1);
    assert.equal(metric('mcp_guard_jwks_fetches_total').find((v) => v.labels.result === 'success')?.value, 1);
    assert.equal(metric('mcp_guard_rate_limited_total')[0]?.value, 0);
    // The decision hook cannot time requests: durations come from recordRequest, as the gateway feeds them.
    assert.equal(metric('mcp_guard_request_duration_seconds').length, 0);
    assert.ok(!(await registry.metrics()).includes('alice'), 'no subject');
  });

  it('counts rate_limited decisions, and observes durations given to recordRequest', async () => {
    const own = new Registry();
    const m = createGuardMetrics({ registry: own });
    m.recordRequest({ decision: 'deny', reason: 'rate_limited', httpMethod: 'POST', method: 'tools/call', name: 'x', durationSeconds: 0.002 });
    m.recordRequest({ decision: 'allow', reason: 'allowed', httpMethod: 'GET', durationSeconds: 0.5 });
    const text = await own.metrics();
    assert.match(text, /^mcp_guard_rate_limited_total 1$/m);
    assert.match(text, /^mcp_guard_requests_total\{method="tools\/call",decision="deny",reason="rate_limited"\} 1$/m);
    assert.match(text, /^mcp_guard_request_duration_seconds_count\{method="tools\/call",decision="deny"\} 1$/m);
    assert.match(text, /^mcp_guard_requests_total\{method="GET",decision="allow",reason="allowed"\} 1$/m);
    assert.ok(!text.includes('tool='), 'no tool label unless asked for');
  });

  it('bounds the tool label set to the names given, at most MAX_TOOL_LABELS', async () => {
    const own = new Registry();
    const names = Array.from({ length: MAX_TOOL_LABELS + 20 }, (_, i) => `tool_${i}`);
    const m = createGuardMetrics({ registry: own, toolLabels: names });
    for (const name of names) m.recordRequest({ decision: 'allow', reason: 'allowed', httpMethod: 'POST', method: 'tools/call', name });
    const values = (await own.getMetricsAsJSON()).find((x) => x.name === 'mcp_guard_requests_total')!.values;
    assert.equal(values.length, MAX_TOOL_LABELS + 1);
    assert.equal(values.find((v) => v.labels.tool === 'other')?.value, 20);
  });

  it('refuses what is not a registry, a second set in the same registry, and tool labels that are not names', () => {
    const refuses = (build: () => unknown, setting: string) => assert.throws(build, (e: unknown) => e instanceof ConfigurationError && e.setting === setting);
    refuses(() => createGuardMetrics({ registry: {} as Registry }), 'registry');
    refuses(() => createGuardMetrics({ registry }), 'registry');
    refuses(() => createGuardMetrics({ registry: new Registry(), toolLabels: 'echo' as never }), 'toolLabels');
  });
});
