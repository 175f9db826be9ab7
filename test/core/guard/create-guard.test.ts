// The framework-free guard, driven without Express: metadata, error answers, authentication with real
// JWTs from a local issuer, authorization, list filtering and the decision hook.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { createGuard, type Guard } from '../../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../../src/core/kernel/decision.js';
import {
  AuthorizationServerUnavailableError,
  ConfigurationError,
  InsufficientScopeError,
  InvalidRequestError,
  InvalidTokenError,
  MissingTokenError,
  RequestRejectedError,
} from '../../../src/core/kernel/errors.js';
import type { GuardOptions } from '../../../src/core/guard/guard-options.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { DEFAULT_JWT_ALGORITHMS } from '../../../src/core/jwt/jws-algorithms.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const METADATA_URL = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';
const ISSUER = 'https://auth.example.com';
/** The DPoP challenge a 401 also carries by default (`dpop: 'allow'`, RFC 9449 §7.1). */
const DPOP_CHALLENGE = (scope = 'mcp') => `DPoP algs="${DEFAULT_JWT_ALGORITHMS.join(' ')}"${scope ? `, scope="${scope}"` : ''}, resource_metadata="${METADATA_URL}"`;

const policy = {
  scopesSupported: ['mcp', 'x:read', 'x:admin', 'offline_access'],
  requiredScopes: ['mcp'],
  tools: { echo: [], admin_tool: ['x:admin'] },
  resources: { 'notes://{id}': ['x:read'] },
};

function guardWith(extra: Partial<GuardOptions> = {}): Guard {
  return createGuard({ issuer: ISSUER, resource: RESOURCE, policy, ...extra });
}

/** An identity as the verifier builds it (the real one is tested below with a signed token). */
function authWith(scopes: string[], sub: string | null = 'alice'): AuthInfo {
  return {
    token: 'not-a-real-token',
    clientId: 'client-1',
    scopes,
    extra: { ...(sub === null ? {} : { sub }), iss: ISSUER, claims: {}, tokenType: 'jwt' },
  };
}

const call = (name: unknown, id: string | number = 1): JsonRpcMessage =>
  ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }) as JsonRpcMessage;

describe('createGuard: metadata and URLs', () => {
  test('a resource with a path: canonical resource, path-suffixed metadata URL, both well-known paths', () => {
    const guard = createGuard({ issuer: ISSUER, resource: 'HTTPS://MCP.Example.com/mcp/', policy, resourceName: 'Notes' });
    assert.equal(guard.resource, RESOURCE);
    assert.equal(guard.resourcePath, '/mcp');
    assert.equal(guard.resourceMetadataUrl, METADATA_URL);
    assert.deepEqual(guard.metadataPaths, ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']);
    assert.deepEqual(guard.metadata, {
      resource: RESOURCE,
      authorization_servers: [ISSUER],
      scopes_supported: ['mcp', 'x:read', 'x:admin'],
      bearer_methods_supported: ['header'],
      resource_name: 'Notes',
      dpop_signing_alg_values_supported: [...DEFAULT_JWT_ALGORITHMS],
    });
    assert.equal(guard.metadataJson, JSON.stringify(guard.metadata));
  });

  test('a path-less resource: no trailing slash, one well-known path, endpoint at /', () => {
    const guard = createGuard({ issuers: [ISSUER, 'https://a.example', 'https://b.example'], resource: 'https://mcp.example.com/', authorizationServers: ['https://a.example', 'https://b.example'] });
    assert.equal(guard.resource, 'https://mcp.example.com');
    assert.equal(guard.resourcePath, '/');
    assert.equal(guard.resourceMetadataUrl, 'https://mcp.example.com/.well-known/oauth-protected-resource');
    assert.deepEqual(guard.metadataPaths, ['/.well-known/oauth-protected-resource']);
    assert.deepEqual(JSON.parse(guard.metadataJson), {
      resource: 'https://mcp.example.com',
      authorization_servers: ['https://a.example', 'https://b.example'],
      scopes_supported: [],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: [...DEFAULT_JWT_ALGORITHMS],
    });
  });
});

describe('createGuard: errorResponse', () => {
  const guard = guardWith();

  test('MissingTokenError: 401 with a bare challenge (no error) for each scheme, body -31401 without data', () => {
    const answer = guard.errorResponse(new MissingTokenError(), 3);
    assert.equal(answer.status, 401);
    assert.deepEqual(answer.headers, { 'WWW-Authenticate': `Bearer scope="mcp", resource_metadata="${METADATA_URL}", ${DPOP_CHALLENGE()}` });
    assert.equal(answer.body.id, 3);
    assert.equal(answer.body.error.code, -31401);
    assert.equal(Object.hasOwn(answer.body.error, 'data'), false);
  });

  test('InvalidRequestError: 400 invalid_request with the description, data.error', () => {
    const answer = guard.errorResponse(new InvalidRequestError('send one "Authorization" header'), 'a');
    assert.equal(answer.status, 400);
    assert.deepEqual(answer.headers, {
      'WWW-Authenticate': `Bearer error="invalid_request", error_description="send one \\"Authorization\\" header", scope="mcp", resource_metadata="${METADATA_URL}"`,
    });
    assert.deepEqual(answer.body, {
      jsonrpc: '2.0',
      id: 'a',
      error: { code: -32600, message: 'send one "Authorization" header', data: { error: 'invalid_request' } },
    });
  });

  test('InvalidTokenError: 401 invalid_token, data.error', () => {
    const answer = guard.errorResponse(new InvalidTokenError('token expired', 'token_expired'));
    assert.equal(answer.status, 401);
    assert.deepEqual(answer.headers, {
      'WWW-Authenticate': `Bearer error="invalid_token", error_description="token expired", scope="mcp", resource_metadata="${METADATA_URL}", ${DPOP_CHALLENGE()}`,
    });
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -31401, message: 'token expired', data: { error: 'invalid_token' } } });
  });

  test('InsufficientScopeError: 403 whose challenge names required ∪ granted', () => {
    const answer = guard.errorResponse(new InsufficientScopeError('needs x:admin', ['mcp', 'x:admin'], ['mcp', 'x:read']), 9);
    assert.equal(answer.status, 403);
    assert.deepEqual(answer.headers, {
      'WWW-Authenticate': `Bearer error="insufficient_scope", error_description="needs x:admin", scope="mcp x:admin x:read", resource_metadata="${METADATA_URL}"`,
    });
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 9, error: { code: -31403, message: 'needs x:admin', data: { error: 'insufficient_scope' } } });
  });

  test('AuthorizationServerUnavailableError: 503 with Retry-After and no challenge', () => {
    const error = new AuthorizationServerUnavailableError('JWKS unreachable', 7);
    const answer = guard.errorResponse(error, 1);
    assert.equal(answer.status, 503);
    assert.deepEqual(answer.headers, { 'Retry-After': '7' });
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 1, error: { code: -31503, message: 'JWKS unreachable' } });
    // The error's own headers are copied, never modified.
    assert.deepEqual(error.headers, { 'Retry-After': '7' });
  });

  test('RequestRejectedError: its status, code and headers, no challenge', () => {
    const answer = guard.errorResponse(
      new RequestRejectedError('Method not allowed', { status: 405, reason: 'method_not_allowed', jsonRpcCode: -32600, headers: { Allow: 'POST, OPTIONS' } }),
    );
    assert.equal(answer.status, 405);
    assert.deepEqual(answer.headers, { Allow: 'POST, OPTIONS' });
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Method not allowed' } });
  });

  test('an unknown error is a 500 Internal error that says nothing of it', () => {
    for (const thrown of [new Error('db password is hunter2'), new TypeError('x is undefined at /srv/app.js:12'), 'a string', undefined]) {
      const answer = guard.errorResponse(thrown, 5);
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.headers, {});
      assert.deepEqual(answer.body, { jsonrpc: '2.0', id: 5, error: { code: -32603, message: 'Internal error' } });
      const text = JSON.stringify(answer);
      assert.ok(!/hunter2|app\.js|a string/.test(text), text);
    }
  });

  test('challengeScopes replaces the policy scopes in challenges; with neither there is no scope', () => {
    const custom = guardWith({ challengeScopes: ['x:read'] });
    assert.equal(custom.errorResponse(new MissingTokenError()).headers['WWW-Authenticate'], `Bearer scope="x:read", resource_metadata="${METADATA_URL}", ${DPOP_CHALLENGE('x:read')}`);
    const none = createGuard({ issuer: ISSUER, resource: RESOURCE });
    assert.equal(none.errorResponse(new MissingTokenError()).headers['WWW-Authenticate'], `Bearer resource_metadata="${METADATA_URL}", ${DPOP_CHALLENGE('')}`);
  });
});

describe('createGuard: authenticate with a real issuer', () => {
  let issuer: TestIssuer;
  let guard: Guard;

  before(async () => {
    issuer = await startTestIssuer();
  });
  after(async () => {
    await issuer?.close();
  });

  test('a valid token: a promise while the keys are fetched, then synchronously, from the keys and then from the cache', async () => {
    guard = createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy });
    const token = await issuer.sign({ aud: RESOURCE, sub: 'alice', client_id: 'client-1', scope: 'mcp x:read' });
    const first = guard.authenticate(`Bearer ${token}`, '/mcp');
    assert.ok(first instanceof Promise, 'the first verification waits for discovery and the JWKS');
    const auth = await first;
    assert.equal(auth.token, token);
    assert.equal(auth.clientId, 'client-1');
    assert.deepEqual(auth.scopes, ['mcp', 'x:read']);
    assert.equal(auth.extra.sub, 'alice');
    assert.equal(auth.extra.iss, issuer.issuer);
    assert.equal(auth.resource?.href, new URL(RESOURCE).href);

    const jwksFetches = issuer.requests('/jwks');
    // A JWT enters the cache on its second use: verified again then, with the key already held, and no promise.
    const secondUse = guard.authenticate(`Bearer ${token}`, '/mcp');
    assert.equal(secondUse instanceof Promise, false, 'verified on the spot with the key already held');
    const cachedAuth = secondUse as typeof auth;
    assert.notEqual(cachedAuth.extra, auth.extra, 'verified again on its second use');
    const third = guard.authenticate(`Bearer ${token}`, '/mcp');
    assert.equal(third instanceof Promise, false, 'a cached token is answered without a promise');
    assert.equal(typeof (third as { then?: unknown }).then, 'undefined');
    assert.equal((third as typeof auth).extra, cachedAuth.extra, 'the cached identity');
    assert.deepEqual(third, auth);

    // Another token from the same key: no promise either, and a refusal is thrown at once.
    const other = guard.authenticate(`Bearer ${await issuer.sign({ aud: RESOURCE, sub: 'bob', scope: 'mcp' })}`, '/mcp');
    assert.equal(other instanceof Promise, false);
    assert.equal((other as typeof auth).extra.sub, 'bob');
    const elsewhere = await issuer.sign({ aud: 'https://elsewhere.example.com/mcp', scope: 'mcp' });
    assert.throws(() => guard.authenticate(`Bearer ${elsewhere}`, '/mcp'), (e: unknown) => e instanceof InvalidTokenError && e.reason === 'token_audience');
    const expired = await issuer.sign({ aud: RESOURCE, scope: 'mcp', exp: Math.floor(Date.now() / 1000) - 60 });
    assert.throws(() => guard.authenticate(`Bearer ${expired}`, '/mcp'), (e: unknown) => e instanceof InvalidTokenError && e.reason === 'token_expired');
    assert.equal(issuer.requests('/jwks'), jwksFetches, 'no JWKS request for any of them');
  });

  test('no Authorization header throws MissingTokenError synchronously', async () => {
    guard ??= createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy });
    assert.throws(() => guard.authenticate(undefined, '/mcp'), MissingTokenError);
    await assertGuardError(() => guard.authenticate(['Bearer a', 'Bearer b'], '/mcp'), InvalidRequestError, 'token_multiple', 400);
  });

  test('a token for another audience or signed by another key is rejected with InvalidTokenError', async () => {
    guard ??= createGuard({ issuer: issuer.issuer, resource: RESOURCE, policy });
    const otherAudience = await issuer.sign({ aud: 'https://other.example.com/mcp', sub: 'alice', scope: 'mcp' });
    const e = await assertGuardError(Promise.resolve().then(() => guard.authenticate(`Bearer ${otherAudience}`, '/mcp')), InvalidTokenError, 'token_audience', 401);
    assert.ok(!e.message.includes(otherAudience));
    const { generateKeyPair } = await import('jose');
    const attacker = await generateKeyPair('ES256');
    const forged = await issuer.sign({ aud: RESOURCE, sub: 'mallory', scope: 'mcp x:admin' }, { key: attacker.privateKey });
    await assertGuardError(Promise.resolve().then(() => guard.authenticate(`Bearer ${forged}`, '/mcp')), InvalidTokenError, 'token_signature', 401);
  });
});

describe('createGuard: refuseBeforeHold', () => {
  // admin_tool may be hidden (hiddenTarget): only refusals that hold whether it is or not are given before a hold.
  const hiding = guardWith({ hiddenTarget: (message) => ((message as { params?: { name?: unknown } }).params?.name === 'admin_tool' ? 'tool' : undefined) });

  test('a token without the base scopes: the 403 a hidden target gets, naming none of its own rule\'s scopes', async () => {
    const e = await assertGuardError(() => hiding.refuseBeforeHold(call('admin_tool'), authWith(['x:read']), {}), InsufficientScopeError, 'scope_insufficient', 403);
    assert.equal(e.message, "Insufficient scope for tool 'admin_tool' (tools/call): missing mcp");
    assert.deepEqual([...e.requiredScopes], ['mcp']);
    await assertGuardError(() => hiding.refuseBeforeHold({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, authWith([]), {}), InsufficientScopeError, 'scope_insufficient', 403);
  });

  test('a refusal by the tool\'s own rule waits: a hidden tool would be answered as unknown, not refused', () => {
    assert.equal(hiding.refuseBeforeHold(call('admin_tool'), authWith(['mcp']), {}), undefined);
    assert.equal(hiding.refuseBeforeHold(call('echo'), authWith(['mcp']), {}), undefined);
  });

  test('headers that disagree with the body: the same 400 as authorize, at once', async () => {
    await assertGuardError(() => hiding.refuseBeforeHold(call('echo'), authWith(['mcp']), { 'mcp-method': 'tools/list' }), RequestRejectedError, 'header_mismatch', 400);
  });

  test('without hiddenTarget the whole decision is made: the tool\'s own rule refuses', async () => {
    const e = await assertGuardError(() => guardWith().refuseBeforeHold(call('admin_tool'), authWith(['mcp']), {}), InsufficientScopeError, 'scope_insufficient', 403);
    assert.match(e.message, /missing x:admin$/);
  });
});

describe('createGuard: hiddenTarget', () => {
  test('a hidden target is answered as unknown; reported target_unknown, or with the reason and server it names', async () => {
    const plain = guardWith({ hiddenTarget: () => 'tool' });
    const unknown = await assertGuardError(() => plain.authorize(call('echo'), authWith(['mcp']), {}), RequestRejectedError, 'target_unknown', 200);
    assert.equal(unknown.server, undefined);
    const named = guardWith({ hiddenTarget: () => ({ kind: 'tool', reason: 'tool_pin_mismatch', server: 'notes' }) });
    const pinned = await assertGuardError(() => named.authorize(call('echo'), authWith(['mcp']), {}), RequestRejectedError, 'tool_pin_mismatch', 200);
    assert.equal(pinned.server, 'notes');
    // The client's answer is the same either way: nothing tells it which reason was reported.
    assert.deepEqual(named.errorResponse(pinned, 1), plain.errorResponse(unknown, 1));
    assert.deepEqual(named.errorResponse(pinned, 1).body, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: echo' } });
    const reasonOnly = guardWith({ hiddenTarget: () => ({ kind: 'prompt' }) });
    const prompt = await assertGuardError(() => reasonOnly.authorize({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'p' } }, authWith(['mcp']), {}), RequestRejectedError, 'target_unknown', 200);
    assert.equal(prompt.message, 'Unknown prompt: p');
    // A reason that does not say the target is hidden (from a JavaScript caller) is reported as unknown, never as an allow.
    const odd = guardWith({ hiddenTarget: () => ({ kind: 'tool', reason: 'allowed' as never }) });
    await assertGuardError(() => odd.authorize(call('echo'), authWith(['mcp']), {}), RequestRejectedError, 'target_unknown', 200);
  });
});

describe('createGuard: authorize', () => {
  const guard = guardWith();

  test('an allowed call returns the required scopes and the protocol version', () => {
    assert.deepEqual(guard.authorize(call('echo'), authWith(['mcp']), {}), { protocolVersion: undefined, requiredScopes: ['mcp'], rule: 'tools.echo' });
    const result = guard.authorize(call('admin_tool'), authWith(['mcp', 'x:admin']), { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(result.protocolVersion, '2025-11-25');
    assert.deepEqual([...result.requiredScopes].sort(), ['mcp', 'x:admin']);
  });

  test('a call beyond the token\'s scopes throws a 403 InsufficientScopeError', async () => {
    const e = await assertGuardError(() => guard.authorize(call('admin_tool'), authWith(['mcp', 'x:read']), {}), InsufficientScopeError, 'scope_insufficient', 403);
    assert.equal(e.message, "Insufficient scope for tool 'admin_tool' (tools/call): missing x:admin");
    assert.deepEqual([...e.requiredScopes].sort(), ['mcp', 'x:admin']);
    assert.deepEqual([...e.challengeScopes].sort(), ['mcp', 'x:admin', 'x:read']);
    assert.match(guard.errorResponse(e).headers['WWW-Authenticate']!, /scope="[^"]*x:admin[^"]*"/);
  });

  test('a token without the base scope is refused even for an open tool', async () => {
    await assertGuardError(() => guard.authorize(call('echo'), authWith(['x:read']), {}), InsufficientScopeError, 'scope_insufficient', 403);
  });

  test('headers that disagree with the body: 400 -32020, checked before the scope policy', async () => {
    const e = await assertGuardError(
      () => guard.authorize(call('admin_tool'), authWith(['mcp']), { 'mcp-method': 'tools/list' }),
      RequestRejectedError,
      'header_mismatch',
      400,
    );
    assert.equal(e.jsonRpcCode, -32020);
    assert.equal(guard.errorResponse(e, 1).body.error.code, -32020);
  });

  test('a tools/call whose name is not a string: 400 -32602, the handler never sees it', async () => {
    for (const name of [['admin_tool'], ['echo'], 42, '', null, { toString: 'echo' }]) {
      const e = await assertGuardError(() => guard.authorize(call(name), authWith(['mcp', 'x:admin']), {}), RequestRejectedError, 'request_invalid', 400);
      assert.equal(e.jsonRpcCode, -32602, JSON.stringify(name));
      assert.equal(e.message, 'Invalid params: tools/call needs a non-empty string params.name');
    }
  });

  test('a resources/read whose URI carries stray whitespace: 400 -32602', async () => {
    const read = { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: ' notes://1' } } as JsonRpcMessage;
    const e = await assertGuardError(() => guard.authorize(read, authWith(['mcp', 'x:read']), {}), RequestRejectedError, 'request_invalid', 400);
    assert.equal(e.jsonRpcCode, -32602);
  });
});

describe('createGuard: authorizeBase', () => {
  test('returns the base scopes, and refuses a token without them', async () => {
    const guard = guardWith();
    assert.deepEqual(guard.authorizeBase(authWith(['mcp'])), ['mcp']);
    const e = await assertGuardError(() => guard.authorizeBase(authWith(['x:read'])), InsufficientScopeError, 'scope_insufficient', 403);
    assert.deepEqual(e.requiredScopes, ['mcp']);
    assert.equal(e.message, 'Insufficient scope for this request: missing mcp');
  });

  test('a methods["*"] rule does not apply to GET/DELETE', () => {
    const guard = guardWith({ policy: { ...policy, methods: { '*': ['x:admin'] } } });
    assert.deepEqual(guard.authorizeBase(authWith(['mcp'])), ['mcp']);
    // …while it does apply to messages.
    assert.throws(() => guard.authorize({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, authWith(['mcp']), {}), InsufficientScopeError);
  });
});

describe('createGuard: filterResponse', () => {
  const guard = guardWith();
  const list: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const tools = [{ name: 'echo' }, { name: 'admin_tool' }];

  test('a tools/list result is filtered to what the caller may call', () => {
    const response: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { tools, nextCursor: 'c' } };
    const filtered = guard.filterResponse(list, response, authWith(['mcp']));
    assert.deepEqual(filtered, { jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'echo' }], nextCursor: 'c' } });
    assert.deepEqual((guard.filterResponse(list, response, authWith(['mcp', 'x:admin'])) as unknown as { result: { tools: unknown[] } }).result.tools, tools);
  });

  test('a list is filtered whatever request or id carries it: the shape decides', () => {
    const filtered = { result: { tools: [{ name: 'echo' }] } };
    const response: JsonRpcMessage = { jsonrpc: '2.0', id: '1', result: { tools } };
    assert.deepEqual(guard.filterResponse(list, response, authWith(['mcp'])), { ...response, ...filtered }, 'id "1" for 1');
    const callResult: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { tools } };
    assert.deepEqual(guard.filterResponse(call('echo'), callResult, authWith(['mcp'])), { ...callResult, ...filtered }, 'a list on a call');
    const notification: JsonRpcMessage = { jsonrpc: '2.0', method: 'tools/list' };
    assert.deepEqual(guard.filterResponse(notification, callResult, authWith(['mcp'])), { ...callResult, ...filtered });
  });

  test('error responses and results without a list pass untouched', () => {
    const error: JsonRpcMessage = { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'x' } };
    assert.equal(guard.filterResponse(list, error, authWith(['mcp'])), error);
    const callResult: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { content: [] } };
    assert.equal(guard.filterResponse(call('echo'), callResult, authWith(['mcp'])), callResult);
  });
});

describe('createGuard: report', () => {
  test('tells onDecision the decision, caller, method, target and scopes — never the token', () => {
    const events: DecisionEvent[] = [];
    const guard = guardWith({ onDecision: (e) => events.push(e) });
    guard.report('deny', 'scope_insufficient', 403, {
      httpMethod: 'POST',
      message: call('admin_tool'),
      auth: authWith(['mcp', 'x:read']),
      requiredScopes: ['mcp', 'x:admin'],
    });
    guard.report('allow', 'allowed', 200, {
      httpMethod: 'POST',
      message: { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'notes://1' } },
      auth: authWith(['mcp'], null),
    });
    guard.report('deny', 'token_missing', 401, { httpMethod: 'GET' });
    assert.deepEqual(events, [
      {
        decision: 'deny',
        reason: 'scope_insufficient',
        status: 403,
        httpMethod: 'POST',
        subject: 'alice',
        clientId: 'client-1',
        grantedScopes: ['mcp', 'x:read'],
        method: 'tools/call',
        name: 'admin_tool',
        requiredScopes: ['mcp', 'x:admin'],
      },
      { decision: 'allow', reason: 'allowed', status: 200, httpMethod: 'POST', clientId: 'client-1', grantedScopes: ['mcp'], method: 'resources/read', name: 'notes://1' },
      { decision: 'deny', reason: 'token_missing', status: 401, httpMethod: 'GET' },
    ]);
    assert.ok(!JSON.stringify(events).includes('not-a-real-token'));
  });

  test('a throwing hook is called and its error swallowed', () => {
    let calls = 0;
    const guard = guardWith({
      onDecision: () => {
        calls++;
        throw new Error('audit sink down');
      },
    });
    assert.doesNotThrow(() => guard.report('allow', 'allowed', 200, { httpMethod: 'POST' }));
    assert.equal(calls, 1);
  });

  test('with the audit trail alone, the event builds what no record reads only when it is read', () => {
    const guard = guardWith({ audit: { to: { write: () => {} } } });
    const required = ['mcp', 'x:admin'];
    const event = guard.report('deny', 'scope_insufficient', 403, { httpMethod: 'POST', message: call('admin_tool'), auth: authWith(['mcp']), requiredScopes: required, detail: 'd'.repeat(600) });
    assert.ok(event !== undefined);
    assert.deepEqual([event.decision, event.reason, event.status, event.subject, event.name], ['deny', 'scope_insufficient', 403, 'alice', 'admin_tool']);
    assert.deepEqual(event.requiredScopes, required);
    assert.notEqual(event.requiredScopes, required, 'a copy, as a hook gets');
    assert.equal(event.detail, `${'d'.repeat(512)}…`, 'bounded as for a hook');
    assert.equal(guard.report('allow', 'allowed', 200, { httpMethod: 'POST' })?.requiredScopes, undefined);
  });

  test('without a hook, report does nothing', () => {
    assert.doesNotThrow(() => guardWith().report('deny', 'token_missing', 401, { httpMethod: 'POST' }));
  });
});

describe('createGuard: configuration errors', () => {
  function configurationError(fn: () => unknown): ConfigurationError {
    try {
      fn();
    } catch (error) {
      assert.ok(error instanceof ConfigurationError, String(error));
      assert.ok(error.message.startsWith(`${error.setting}: `), error.message);
      return error;
    }
    assert.fail('expected a ConfigurationError');
  }

  test('names options.resource by default', () => {
    assert.equal(configurationError(() => createGuard({ issuer: ISSUER, resource: '' })).setting, 'options.resource');
    assert.equal(configurationError(() => createGuard({ issuer: ISSUER, resource: 'http://mcp.example.com/mcp' })).setting, 'options.resource');
    assert.equal(configurationError(() => createGuard({ issuer: '', resource: RESOURCE })).setting, 'options.issuer');
  });

  test('uses the caller\'s names (environment variables) when given', () => {
    const names = { resource: 'MCP_AUTH_RESOURCE', issuer: 'MCP_AUTH_ISSUER', policy: 'MCP_AUTH_POLICY', allowedOrigins: 'MCP_AUTH_ALLOWED_ORIGINS' };
    const resource = configurationError(() => createGuard({ issuer: ISSUER, resource: 'not a url' }, names));
    assert.equal(resource.setting, 'MCP_AUTH_RESOURCE');
    assert.ok(resource.message.startsWith('MCP_AUTH_RESOURCE: '));
    assert.equal(configurationError(() => createGuard({ issuer: 'ftp://x', resource: RESOURCE }, names)).setting, 'MCP_AUTH_ISSUER');
    const bogusPolicy = { bogus: ['x'] } as unknown as GuardOptions['policy'];
    assert.equal(configurationError(() => createGuard({ issuer: ISSUER, resource: RESOURCE, policy: bogusPolicy }, names)).setting, 'MCP_AUTH_POLICY');
    assert.equal(configurationError(() => createGuard({ issuer: ISSUER, resource: RESOURCE, policy: bogusPolicy })).setting, 'options.policy');
  });

  test('every bad option at once, in one error listing each', () => {
    const bogusPolicy = { bogus: ['x'] } as unknown as GuardOptions['policy'];
    const options = { issuer: '', resource: RESOURCE, maxBodyBytes: 0, dpop: 'sometimes', rateLimit: 'lots', policy: bogusPolicy } as unknown as GuardOptions;
    assert.throws(
      () => createGuard(options),
      (error: unknown) => {
        assert.ok(error instanceof ConfigurationError, String(error));
        assert.deepEqual(error.problems.map((p) => p.setting), ['options.issuer', 'options.maxBodyBytes', 'options.policy', 'options.dpop', 'options.rateLimit']);
        assert.match(error.message, /^5 settings need fixing:\n {2}options\.issuer: /);
        return true;
      },
    );
    // With the issuer and resource right, the token verifier's and the origin check's problems are listed too.
    assert.throws(
      () => createGuard({ issuer: ISSUER, resource: RESOURCE, jwksUri: 'notaurl', allowedOrigins: ['x'], dpop: 'sometimes' as never }),
      (error: unknown) => error instanceof ConfigurationError && error.problems.map((p) => p.setting).join() === 'options.dpop,options.jwksUri,options.allowedOrigins',
    );
  });
});
