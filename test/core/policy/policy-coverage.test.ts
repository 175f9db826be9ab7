import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closestName, editDistance } from '../../../src/core/kernel/closest-name.js';
import { GUARD_ENV_VARIABLES } from '../../../src/core/guard/load-options-from-env.js';
import { checkPolicyCoverage, policyProtection, withProtectedElsewhere } from '../../../src/core/policy/policy-coverage.js';
import { describeUnknownSetting, findUnknownSettings } from '../../../src/core/kernel/unknown-settings.js';

describe('checkPolicyCoverage', () => {
  it('a tool-name typo: the rule matches nothing (with the name meant), and the real tool is open', () => {
    const coverage = checkPolicyCoverage({ tools: { ad: ['calc:use'], echo: ['calc:use'] } }, { tools: ['add', 'echo'] });
    assert.deepEqual(coverage.tools, { protected: ['echo'], open: ['add'], explicitlyOpen: [] });
    assert.deepEqual(coverage.unmatchedRules, [{ kind: 'tool', name: 'ad', suggestion: 'add' }]);
  });

  it('"*" covers unnamed tools; an empty rule is open on purpose; a function counts as protected', () => {
    const coverage = checkPolicyCoverage({ tools: { whoami: [], dynamic: () => ['x'], '*': ['admin'] } }, { tools: ['whoami', 'dynamic', 'other'] });
    assert.deepEqual(coverage.tools, { protected: ['dynamic', 'other'], open: [], explicitlyOpen: ['whoami'] });
    assert.deepEqual(coverage.unmatchedRules, []);
  });

  it('no policy: everything listed is open; an unlisted kind is not checked', () => {
    const coverage = checkPolicyCoverage(undefined, { tools: ['a'], prompts: [] });
    assert.deepEqual(coverage.tools?.open, ['a']);
    assert.deepEqual(coverage.prompts, { protected: [], open: [], explicitlyOpen: [] });
    assert.equal(coverage.resources, undefined);
  });

  it('a rule for a kind the server does not offer matches nothing, with no suggestion', () => {
    const coverage = checkPolicyCoverage({ prompts: { summarize: ['p'] } }, { prompts: [] });
    assert.deepEqual(coverage.unmatchedRules, [{ kind: 'prompt', name: 'summarize' }]);
  });

  it('resources match as the guard matches them: resolved URIs, templates, template strings', () => {
    const coverage = checkPolicyCoverage(
      { resources: { 'docs://private/{name}': ['docs:private'], 'DOCS://public/readme': ['docs:read'], 'file:///etc/pasword': ['root'] } },
      { resources: ['docs://private/plan', 'docs://public/readme', 'docs://other'], resourceTemplates: ['docs://private/{name}', 'file:///{path}'] },
    );
    assert.deepEqual(coverage.resources?.protected, ['docs://private/plan', 'docs://public/readme', 'docs://private/{name}']);
    assert.deepEqual(coverage.resources?.open, ['docs://other', 'file:///{path}']);
    assert.deepEqual(coverage.unmatchedRules, [{ kind: 'resource', name: 'file:///etc/pasword' }]);
  });

  it('rate-limit tool names are checked as tool rules are: a typo with the name meant, "*" never', () => {
    const coverage = checkPolicyCoverage({ tools: { '*': ['x'] }, rateLimits: { tools: { notes_ad: '10/min', nothing_like_it: '1/s', notes_list: '5/s', '*': '1/s' } } }, { tools: ['notes_add', 'notes_list'] });
    assert.deepEqual(coverage.unmatchedRules, [{ kind: 'tool rate limit', name: 'notes_ad', suggestion: 'notes_add' }, { kind: 'tool rate limit', name: 'nothing_like_it' }]);
    assert.deepEqual(checkPolicyCoverage({ rateLimits: { tools: { notes_ad: '1/s' } } }, { prompts: [] }).unmatchedRules, [], 'not checked when tools are not listed');
  });

  it('names are compared byte for byte: a rule "Add" does not cover "add"', () => {
    const coverage = checkPolicyCoverage({ tools: { Add: ['x'] } }, { tools: ['add'] });
    assert.deepEqual(coverage.tools?.open, ['add']);
    assert.deepEqual(coverage.unmatchedRules, [{ kind: 'tool', name: 'Add', suggestion: 'add' }]);
  });
});

describe('closestName', () => {
  it('suggests a near name, and nothing for a far one or an exact one', () => {
    assert.equal(editDistance('ad', 'add'), 1);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(closestName('ad', ['echo', 'add']), 'add');
    assert.equal(closestName('notes_ad', ['notes_add', 'notes_list']), 'notes_add');
    assert.equal(closestName('zzz', ['add', 'echo']), undefined);
    // A prefix the names share counts for nothing: only the parts after it are compared, a swap of two letters is one edit.
    assert.equal(closestName('MCP_AUTH_TOKEN', ['MCP_AUTH_ISSUER', 'MCP_AUTH_UPSTREAM_TOKEN']), undefined);
    assert.equal(closestName('MCP_AUTH_SCOPES', ['MCP_AUTH_DPOP', 'MCP_AUTH_POLICY']), undefined);
    assert.equal(closestName('MCP_AUTH_POLICIES', ['MCP_AUTH_DPOP', 'MCP_AUTH_POLICY']), 'MCP_AUTH_POLICY');
    assert.equal(closestName('counter_raed', ['counter_read', 'counter_write']), 'counter_read');
    assert.equal(editDistance('raed', 'read'), 1);
    assert.equal(closestName('add', ['add', 'ad']), undefined);
    assert.equal(closestName('x'.repeat(10_000), ['x']), undefined, 'long names are not compared');
  });
});

describe('findUnknownSettings', () => {
  it('names each MCP_AUTH_* variable that is no setting, with the closest known one; others are ignored', () => {
    const unknown = findUnknownSettings({ MCP_AUTH_POLICIES: 'p.json', MCP_AUTH_ISSUER: 'x', MCP_AUTH_ZZZZZZZZZZZZZZZZZZZZZZZZ: '1', HOME: '/root', MCP_OTHER: '1' }, GUARD_ENV_VARIABLES);
    assert.deepEqual(unknown, [{ name: 'MCP_AUTH_POLICIES', suggestion: 'MCP_AUTH_POLICY' }, { name: 'MCP_AUTH_ZZZZZZZZZZZZZZZZZZZZZZZZ' }]);
    assert.equal(describeUnknownSetting(unknown[0]!), 'MCP_AUTH_POLICIES is not a setting; did you mean MCP_AUTH_POLICY?');
    assert.ok(GUARD_ENV_VARIABLES.includes('MCP_AUTH_INTROSPECTION_CLIENT_SECRET'));
  });
});

it('an item another policy protects counts as protected; policyProtection decides as the coverage check does', () => {
  const gateway = { tools: { '*': { when: "'staff' in claims.groups" } }, prompts: { 'notes__open_prompt': [] } };
  const protects = policyProtection(gateway);
  assert.equal(protects('tools', 'notes__add'), true);
  assert.equal(protects('prompts', 'notes__open_prompt'), false, 'an empty rule protects nothing');
  assert.equal(protects('prompts', 'notes__other'), false, 'no rule, no *: open');
  assert.equal(policyProtection(undefined)('tools', 'notes__add'), false);
  assert.equal(policyProtection({ resources: { 'crm://{tenant}/notes': ['crm:read'] } })('resources', 'crm://acme/notes'), true);
  const own = checkPolicyCoverage({ tools: { add: [] } }, { tools: ['add', 'echo'], prompts: ['open_prompt'] });
  const counted = withProtectedElsewhere(own, (kind, name) => protects(kind, `notes__${name}`));
  assert.deepEqual(counted.tools, { protected: ['echo', 'add'], open: [], explicitlyOpen: [] });
  assert.deepEqual(counted.prompts, { protected: [], open: ['open_prompt'], explicitlyOpen: [] });
  assert.equal(counted.resources, undefined);
});
