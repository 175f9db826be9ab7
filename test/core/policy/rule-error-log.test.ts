import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { ruleErrorWarnings, RULE_ERROR_WARNING_INTERVAL_MS } from '../../../src/core/policy/rule-error-log.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

const SECRET = 'hunter2-SECRET';
const auth = (claims: Record<string, unknown> = {}): AuthInfo => ({ token: 't', clientId: 'c', scopes: ['mcp'], extra: { sub: 'u', claims: { sub: 'u', ...claims }, tokenType: 'jwt' } });
const call = (name: string, args: Record<string, unknown>): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

test('a condition that fails is logged with its rule and a fixed category, never the value that made it fail', () => {
  const lines: string[] = [];
  const policy = compilePolicy(
    { tools: { convert: { when: 'int(mcp.arguments.n) > 1' }, compare: { when: 'mcp.arguments.n > 1' }, missing: { when: 'claims.department == "x"' } } },
    'policy',
    { onRuleError: ruleErrorWarnings((line) => lines.push(line)) },
  );
  const decisions = ['convert', 'compare', 'missing'].map((name) => policy.authorize(call(name, { n: SECRET }), auth({ note: SECRET })));
  for (const decision of decisions) {
    assert.equal(decision.allowed, false);
    assert.ok(!JSON.stringify(decision).includes(SECRET), 'the decision carries no value');
  }
  assert.equal(lines.length, 3);
  for (const line of lines) assert.ok(!line.includes(SECRET), line);
  const fields = lines.map((line) => JSON.parse(line) as { event: string; rule: string; setting: string; category: string });
  // The rule as the refusal and the audit record name it, and the setting where it is written.
  assert.deepEqual(
    fields.map((f) => [f.event, f.rule, f.setting, f.category]),
    [
      ['warning', 'tools.convert', 'policy.tools.convert', 'type mismatch'],
      ['warning', 'tools.compare', 'policy.tools.compare', 'type mismatch'],
      ['warning', 'tools.missing', 'policy.tools.missing', 'no such key'],
    ],
  );
  assert.deepEqual(decisions.map((d) => d.rule), ['tools.convert', 'tools.compare', 'tools.missing']);
});

test('one warning per rule path a minute; a rule function failure is named without its error text', () => {
  const lines: string[] = [];
  let now = 1_000;
  const seen: string[] = [];
  const hook = ruleErrorWarnings((line) => lines.push(line), (_error, path) => seen.push(path), () => now);
  for (let i = 0; i < 5; i++) hook(new Error(`bug with ${SECRET}`), 'policy.tools.f');
  assert.equal(lines.length, 1);
  assert.equal(seen.length, 5, 'the application hook is told every time');
  assert.equal((JSON.parse(lines[0]!) as { category: string }).category, 'rule function failed');
  assert.ok(!lines[0]!.includes(SECRET));
  now += RULE_ERROR_WARNING_INTERVAL_MS;
  hook(new Error('again'), 'policy.tools.f');
  assert.equal(lines.length, 2);
});

test("the guard logs a failed condition through its logger", () => {
  const warnings: string[] = [];
  const guard = createGuard({
    issuer: 'https://auth.example.com',
    resource: 'https://mcp.example.com/mcp',
    policy: { tools: { convert: { when: 'int(mcp.arguments.n) > 1' } } },
    logger: { info: () => {}, warn: (line) => warnings.push(line) },
  });
  assert.equal(guard.policy.authorize(call('convert', { n: SECRET }), auth()).allowed, false);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /"rule":"tools\.convert","setting":"options\.policy\.tools\.convert","category":"type mismatch"/);
  assert.ok(!warnings[0]!.includes(SECRET));
  guard.setPolicy({ tools: { other: { when: 'claims.nope == 1' } } });
  guard.policy.authorize(call('other', {}), auth());
  assert.equal(warnings.length, 2, 'a reloaded policy logs too');
});
