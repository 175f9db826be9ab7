// The middleware against the shared table of request rules (test/helpers/request-rule-cases.ts): what a
// 2026-07-28 request must carry, the methods that revision removed, and that the handler gets exactly what was
// authorized. Real HTTP on 127.0.0.1, real signed tokens.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JsonRpcMessage, JsonRpcResponse, McpMessageHandler } from '../../src/index.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp } from '../helpers/http-client.js';
import { PRIVATE_SCOPE, READ_SCOPE, refusalId, RULE_CASES, RULE_POLICY } from '../helpers/request-rule-cases.js';

describe('request rules through the middleware', () => {
  let issuer: TestIssuer;
  let app: GuardedApp;
  const tokens: Record<'read' | 'private', string> = { read: '', private: '' };
  const delivered = new Map<unknown, JsonRpcMessage>();

  const handler: McpMessageHandler = (message) => {
    const id = (message as { id?: unknown }).id;
    delivered.set(id, message);
    const method = (message as { method?: string }).method;
    return { jsonrpc: '2.0', id, result: { resultType: 'complete', ...(method === 'tools/list' ? { tools: [] } : {}) } } as JsonRpcResponse;
  };

  before(async () => {
    issuer = await startTestIssuer();
    app = await startGuardedApp((origin) => ({ issuer: issuer.issuer, resource: `${origin}/mcp`, policy: structuredClone(RULE_POLICY), handler }));
    for (const [who, scope] of [['read', READ_SCOPE], ['private', PRIVATE_SCOPE]] as const) {
      tokens[who] = await issuer.sign({ aud: app.url, sub: 'alice', scope });
    }
  });
  after(async () => {
    await app?.close();
    await issuer?.close();
  });

  for (const c of RULE_CASES) {
    test(c.name, async () => {
      const id = c.message.id;
      const res = await postMcp(app.url, c.message, tokens[c.token ?? 'read'], c.headers);
      if (c.expect === 'forward') {
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json.id, id);
        assert.equal(res.json.result.resultType, 'complete', res.text);
        // Not resolved, trimmed or normalized on the way: the handler got the message as sent.
        assert.deepEqual(delivered.get(id), c.message);
        return;
      }
      assert.equal(res.status, c.expect.status, res.text);
      assert.equal(res.json.jsonrpc, '2.0');
      assert.equal(res.json.id, refusalId(c.message));
      assert.equal(res.json.error.code, c.expect.code, res.text);
      if (c.expect.message) assert.match(res.json.error.message, c.expect.message);
      assert.equal(delivered.has(id), false, 'a refused request never reaches the handler');
    });
  }
});
