// The connected credentials: each user's own token, cached after first use, refreshed before it expires and once
// after an upstream 401; no connection leads to the connect flow, a token naming no user to a refusal.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import type { JsonRpcRequest } from '../../../../src/core/wire/jsonrpc.js';
import { CallerCannotConnectError } from '../../../../src/gateway/connected/flow/caller-cannot-connect-error.js';
import { connectedCredentials, type ConnectionRecords } from '../../../../src/gateway/connected/flow/connected-credentials.js';
import { CONNECT_INPUT_KEY } from '../../../../src/gateway/connected/flow/connection-required-answer.js';
import { ConnectionRequiredError } from '../../../../src/gateway/connected/flow/connection-required-error.js';
import { createRequestStates } from '../../../../src/gateway/connected/flow/request-state.js';
import { ScopeNotGrantedError } from '../../../../src/gateway/connected/flow/scope-not-granted-error.js';
import type { ConnectionRecord, UserRef } from '../../../../src/gateway/connected/oauth/connection-record.js';
import type { CallerFlowRequest } from '../../../../src/gateway/upstream-auth/caller-flow.js';

const alice: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://id.example', sub: 'alice', claims: {}, tokenType: 'jwt' } };
const noUser: AuthInfo = { token: 't', clientId: 'service', scopes: [], extra: { iss: 'https://id.example', claims: {}, tokenType: 'jwt' } };

function record(accessToken: string, expiresAt?: number, scope?: string): ConnectionRecord {
  return { accessToken, tokenType: 'bearer', asIssuer: 'https://as.example', clientId: 'gw', createdAt: 0, updatedAt: 0, ...(expiresAt !== undefined ? { expiresAt } : {}), ...(scope ? { scope } : {}) };
}

function setup(initial: ConnectionRecord | undefined, refreshed: (ConnectionRecord | undefined)[] = []) {
  let clock = 1_000_000;
  const calls = { get: 0, refresh: 0, ended: 0, clearedStepUps: 0, tickets: [] as (string | undefined)[], replacing: [] as (string | undefined)[] };
  let current = initial;
  const records: ConnectionRecords = {
    async get(user: UserRef, server: string) {
      assert.equal(user.subject, 'alice');
      assert.equal(server, 'notes');
      calls.get++;
      return current;
    },
    async refresh(_user: UserRef, _server: string, replacing?: string) {
      calls.refresh++;
      calls.replacing.push(replacing);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const next = refreshed.shift();
      if (next) current = next;
      return next;
    },
    async end() {
      calls.ended++;
      current = undefined;
    },
    async clearStepUp() {
      calls.clearedStepUps++;
      if (current) {
        const { stepUpScope: _cleared, ...rest } = current;
        current = rest;
      }
    },
  };
  const requestStates = createRequestStates({ secrets: [randomBytes(32)], now: () => clock });
  const credentials = connectedCredentials({
    server: 'notes',
    records,
    requestStates,
    createTicket: async (_user, _server, scope) => (calls.tickets.push(scope), new URL('https://gw.example/connect/t')),
    now: () => clock,
  });
  return { credentials, calls, requestStates, advance: (ms: number) => (clock += ms), now: () => clock };
}

describe('connected credentials', () => {
  it('sends the user token as Bearer, read from the records for each request (they keep it in memory)', async () => {
    const { credentials, calls } = setup(record('up-1'));
    assert.equal(credentials.perCaller, true);
    assert.equal(await credentials.authorization(alice), 'Bearer up-1');
    assert.equal(await credentials.authorization(alice), 'Bearer up-1');
    assert.equal(calls.get, 2, 'no second copy of the token is kept here: a disconnection is seen at once');
    assert.equal(calls.refresh, 0);
  });

  it("derives the user once per verified identity (the guard's frozen extra), the same frozen object each request; never for a mutable extra", async () => {
    const seen: UserRef[] = [];
    const records: ConnectionRecords = {
      async get(user) {
        seen.push(user);
        return record('up-1');
      },
      refresh: async () => undefined,
      end: async () => undefined,
      clearStepUp: async () => undefined,
    };
    const credentials = connectedCredentials({ server: 'notes', records, requestStates: createRequestStates({ secrets: [randomBytes(32)] }), createTicket: async () => new URL('https://gw.example/connect/t') });
    const extra = Object.freeze({ iss: 'https://id.example', sub: 'alice', claims: {}, tokenType: 'jwt' as const });
    assert.equal(await credentials.authorization({ ...alice, extra }), 'Bearer up-1');
    assert.equal(await credentials.authorization({ ...alice, token: 't2', extra }), 'Bearer up-1');
    assert.equal(seen[0], seen[1], 'one user object for the identity');
    assert.ok(Object.isFrozen(seen[0]));
    assert.deepEqual(seen[0], { issuer: 'https://id.example', subject: 'alice' });
    const mutable: AuthInfo['extra'] = { iss: 'https://id.example', sub: 'alice', claims: {}, tokenType: 'jwt' };
    await credentials.authorization({ ...alice, extra: mutable });
    mutable.sub = 'bob';
    await credentials.authorization({ ...alice, extra: mutable });
    assert.deepEqual(seen.slice(2).map((user) => user.subject), ['alice', 'bob'], 'a mutable identity is read again each time');
  });

  it('no record: ConnectionRequiredError not_connected; a token naming no user: CallerCannotConnectError', async () => {
    const { credentials } = setup(undefined);
    await assert.rejects(credentials.authorization(alice), (error: unknown) => error instanceof ConnectionRequiredError && error.reason === 'not_connected' && error.server === 'notes');
    await assert.rejects(credentials.authorization(noUser), CallerCannotConnectError);
  });

  it('refreshes before expiry, naming the token it replaces (the records join concurrent refreshes)', async () => {
    const start = 1_000_000;
    const { credentials, calls } = setup(record('up-1', start + 20_000), [record('up-2', start + 3_600_000)]);
    assert.equal(await credentials.authorization(alice), 'Bearer up-2');
    assert.equal(await credentials.authorization(alice), 'Bearer up-2');
    assert.equal(calls.refresh, 1);
    assert.deepEqual(calls.replacing, ['up-1'], 'names the token it replaces: one another replica already replaced is not refreshed again');
  });

  it('an expired token that cannot be refreshed: expired; one close to expiry still serves', async () => {
    const start = 1_000_000;
    const soon = setup(record('up-1', start + 10_000), [undefined]);
    assert.equal(await soon.credentials.authorization(alice), 'Bearer up-1');
    const gone = setup(record('up-1', start - 1), [undefined]);
    await assert.rejects(gone.credentials.authorization(alice), (error: unknown) => error instanceof ConnectionRequiredError && error.reason === 'expired');
  });

  it('renews once after a 401: a refreshed token, or expired when the refresh gives nothing new', async () => {
    const { credentials, calls } = setup(record('up-1'), [record('up-2'), undefined]);
    assert.equal(await credentials.authorization(alice), 'Bearer up-1');
    assert.equal(await credentials.renew(alice, 'Bearer up-1'), 'Bearer up-2');
    assert.equal(calls.refresh, 1);
    assert.equal(await credentials.authorization(alice), 'Bearer up-2');
    await assert.rejects(credentials.renew(alice, 'Bearer up-2'), (error: unknown) => error instanceof ConnectionRequiredError && error.reason === 'expired');
    assert.equal(calls.refresh, 2);
    assert.deepEqual(calls.replacing, ['up-1', 'up-2'], 'each renewal names the refused token');
  });

  it('a step-up asks for the scope named plus the one held, and never twice for the same request', async () => {
    const { credentials, calls } = setup(record('up-1', undefined, 'notes:read'));
    const flow = credentials.flow!;
    await credentials.authorization(alice);
    const request: CallerFlowRequest = { message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write', arguments: {} } }, auth: alice, sessionId: undefined };
    const error = await flow.insufficientScope(request, 'notes:write');
    assert.ok(error instanceof ConnectionRequiredError);
    assert.equal(error.reason, 'insufficient_scope');
    assert.equal(error.scope, 'notes:read notes:write');
    assert.equal(await flow.insufficientScope(request, 'notes:read'), undefined, 'already held: the refusal passes on');
    assert.equal(await flow.insufficientScope(request, undefined), undefined, 'nothing named: passes on');
    const answer = await flow.answer(error, request);
    assert.match(JSON.stringify(answer), /notes:write/);
    assert.deepEqual(calls.tickets, ['notes:read notes:write']);
  });

  it('a connection made for a step-up that the server granted less: a final refusal for those scopes, a step-up for others', async () => {
    const { credentials, calls } = setup({ ...record('up-1', undefined, 'notes:read'), stepUpScope: 'notes:read notes:write' });
    const flow = credentials.flow!;
    const request: CallerFlowRequest = { message: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'write', arguments: {} } }, auth: alice, sessionId: undefined };
    const refused = await flow.insufficientScope(request, 'notes:write');
    assert.ok(refused instanceof ScopeNotGrantedError);
    assert.equal(refused.scope, 'notes:write');
    const answer = await flow.answer(refused, request);
    assert.equal(answer?.status, 403);
    assert.deepEqual(Object.keys((answer!.response as any).error), ['code', 'message']);
    assert.match((answer!.response as any).error.message, /^Forbidden: the authorization server of the MCP server "notes" did not grant .* \(notes:write\)/);
    assert.deepEqual(calls.tickets, [], 'no link');
    assert.equal(calls.clearedStepUps, 1, 'refused once: the step-up is forgotten');
    const again = await flow.insufficientScope(request, 'notes:write');
    assert.ok(again instanceof ConnectionRequiredError, 'the next request asks again');
    const other = await flow.insufficientScope(request, 'notes:admin');
    assert.ok(other instanceof ConnectionRequiredError, 'a scope the step-up did not ask for is a new step-up');
    assert.equal(other.scope, 'notes:read notes:admin');
  });

  it('prepare: a verified retry loses the gateway state and its inputResponses entry, keeps the rest; a bad one is refused', async () => {
    const { credentials, requestStates } = setup(undefined);
    const flow = credentials.flow!;
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };
    const original: JsonRpcRequest = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: { q: 1 }, requestState: 'upstream-own', _meta: meta } };
    // The upstream's own state is not touched.
    const untouched: CallerFlowRequest = { message: original, auth: alice, sessionId: undefined };
    assert.equal(await flow.prepare(untouched), undefined);
    assert.equal(untouched.message, original);
    // Not connected: the answer carries a new gateway state, which carries the upstream's.
    const first = await flow.answer(new ConnectionRequiredError('notes', 'not_connected'), untouched);
    const state = (first!.response as any).result.requestState as string;
    assert.match(state, /^mcpg1\./);
    const retry: CallerFlowRequest = {
      message: { ...original, id: 2, params: { ...original.params, requestState: state, inputResponses: { [CONNECT_INPUT_KEY]: { action: 'accept' }, theirs: { action: 'accept', content: { a: 1 } } } } },
      auth: alice,
      sessionId: undefined,
    };
    assert.equal(await flow.prepare(retry), undefined);
    const params = (retry.message as JsonRpcRequest).params!;
    assert.equal(params.requestState, 'upstream-own');
    assert.deepEqual(params.inputResponses, { theirs: { action: 'accept', content: { a: 1 } } });
    assert.deepEqual(params.arguments, { q: 1 });
    // The same state again: refused, never forwarded.
    const replay: CallerFlowRequest = { message: { ...original, id: 3, params: { ...original.params, requestState: state } }, auth: alice, sessionId: undefined };
    const refused = await flow.prepare(replay);
    assert.equal(refused?.status, 200);
    assert.match((refused!.response as any).error.message, /already used/);
    // A user who declined is not asked again for that request: the link comes as a tool result.
    const again = requestStates.mint({ auth: alice, message: original, server: 'notes' });
    const declined: CallerFlowRequest = { message: { ...original, id: 4, params: { ...original.params, requestState: again, inputResponses: { [CONNECT_INPUT_KEY]: { action: 'decline' } } } }, auth: alice, sessionId: undefined };
    assert.equal(await flow.prepare(declined), undefined);
    const after = await flow.answer(new ConnectionRequiredError('notes', 'not_connected'), declined);
    assert.equal((after!.response as any).result.isError, true);
  });

  it('2025-11-25: the URL elicitation error for a client whose session declared it, also when the upstream keeps no session (a server set says what it declared)', async () => {
    const { credentials } = setup(undefined);
    const flow = credentials.flow!;
    const call: JsonRpcRequest = { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'notes_add', arguments: { text: 'x' } } };
    const error = new ConnectionRequiredError('notes', 'not_connected');
    const codeOf = async (request: CallerFlowRequest) => ((await flow.answer(error, request))!.response as any).error?.code as number | undefined;
    // Nothing known of what the client declared: the tool result with the link, which every client can show.
    assert.equal(await codeOf({ message: call, auth: alice, sessionId: undefined }), undefined);
    assert.equal(await codeOf({ message: call, auth: alice, sessionId: undefined, clientCapabilities: { elicitation: { url: {} } } }), -32042);
    assert.equal(await codeOf({ message: call, auth: alice, sessionId: undefined, clientCapabilities: { elicitation: {} } }), undefined, 'form elicitation only');
    // The upstream's own session, started by an initialize that declared it.
    flow.sessionStarted('s-1', { jsonrpc: '2.0', id: 0, method: 'initialize', params: { capabilities: { elicitation: { url: {} } } } });
    assert.equal(await codeOf({ message: call, auth: alice, sessionId: 's-1' }), -32042);
  });

  it('a caller of an issuer other than the login issuer is told so in the answer, and no link is made', async () => {
    const tickets: UserRef[] = [];
    const records: ConnectionRecords = { get: async () => assert.fail('no record is read for a caller who cannot connect'), refresh: async () => undefined, end: async () => {}, clearStepUp: async () => {} };
    const credentials = connectedCredentials({
      server: 'notes',
      records,
      requestStates: createRequestStates({ secrets: [randomBytes(32)] }),
      createTicket: async (user) => (tickets.push(user), new URL('https://gw.example/connect/t')),
      loginIssuer: 'https://login.example',
    });
    const carol: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://partner.example', sub: 'carol', claims: {}, tokenType: 'jwt' } };
    const refused = await credentials.authorization(carol).then(() => undefined, (error: unknown) => error);
    assert.ok(refused instanceof CallerCannotConnectError);
    assert.equal(refused.reason, 'other_issuer');
    for (const [method, params] of [['tools/call', { name: 'x', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } } }], ['tools/list', {}]] as const) {
      const request: CallerFlowRequest = { message: { jsonrpc: '2.0', id: 9, method, params }, auth: carol, sessionId: undefined };
      for (const error of [refused, new ConnectionRequiredError('notes', 'not_connected')]) {
        const answer = await credentials.flow!.answer(error, request);
        assert.equal(answer?.status, 403, method);
        const text = (answer!.response as { error: { message: string } }).error.message;
        assert.equal(text, 'Forbidden: accounts of the issuer https://partner.example cannot connect the MCP server "notes": this gateway connects accounts only for users who sign in through https://login.example');
        assert.ok(!JSON.stringify(answer).includes('carol'), 'the subject is never named');
      }
    }
    assert.deepEqual(tickets, [], 'no ticket is made');
    // A caller of the login issuer is led to connect as before.
    const dave: AuthInfo = { ...carol, extra: { ...carol.extra, iss: 'https://login.example', sub: 'dave' } };
    await assert.rejects(connectedCredentials({ server: 'notes', records: { ...records, get: async () => undefined }, requestStates: createRequestStates({ secrets: [randomBytes(32)] }), createTicket: async () => new URL('https://gw.example/connect/t'), loginIssuer: 'https://login.example' }).authorization(dave), ConnectionRequiredError);
  });

  it('a caller that cannot connect is refused with 403, other failures are not the flow\'s', async () => {
    const { credentials } = setup(undefined);
    const request: CallerFlowRequest = { message: { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'x' } }, auth: noUser, sessionId: undefined };
    const answer = await credentials.flow!.answer(new CallerCannotConnectError('notes'), request);
    assert.equal(answer?.status, 403);
    assert.ok(!JSON.stringify(answer).includes('service'));
    assert.equal(credentials.flow!.answer(new Error('other'), request), undefined);
  });
});
