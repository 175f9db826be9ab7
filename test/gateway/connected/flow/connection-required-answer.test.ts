// What a client is told when its request needs an account it has not connected: by revision, method and declared
// capabilities.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonRpcErrorCode, type JsonRpcMessage } from '../../../../src/core/wire/jsonrpc.js';
import { CONNECT_INPUT_KEY, connectionRequiredAnswer, declaresUrlElicitation, requestCapabilities } from '../../../../src/gateway/connected/flow/connection-required-answer.js';
import { ConnectionRequiredError } from '../../../../src/gateway/connected/flow/connection-required-error.js';

const LINK = new URL('https://gateway.example/connect/abc');
const STATELESS_META = (capabilities: unknown) => ({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities });
const URL_CAPS = { elicitation: { url: {} } };

function answer(message: JsonRpcMessage | undefined, urlElicitation: boolean, options: { error?: ConnectionRequiredError; lists?: 'show' | 'hide' } = {}) {
  const made = { links: 0, states: 0 };
  const result = connectionRequiredAnswer(
    { message, urlElicitation },
    {
      error: options.error ?? new ConnectionRequiredError('notes', 'not_connected'),
      link: async () => (made.links++, LINK),
      mintState: () => `mcpg1.state-${++made.states}`,
      ...(options.lists ? { lists: options.lists } : {}),
    },
  );
  return result.then((value) => ({ ...value, made }));
}

const call = (meta?: unknown, method = 'tools/call'): JsonRpcMessage => ({ jsonrpc: '2.0', id: 7, method, params: { name: 'notes_add', arguments: {}, ...(meta ? { _meta: meta } : {}) } });

/** A -32042 with exactly one well-formed URL-mode elicitation, as `URLElicitationRequiredError` requires. */
function assertUrlElicitationRequired(response: unknown): void {
  const error = (response as any).error;
  assert.equal(error.code, JsonRpcErrorCode.UrlElicitationRequired);
  assert.equal(error.data?.elicitations?.length, 1, JSON.stringify(error));
  const [elicitation] = error.data.elicitations;
  assert.deepEqual(Object.keys(elicitation).sort(), ['elicitationId', 'message', 'mode', 'url']);
  assert.equal(elicitation.mode, 'url');
  assert.equal(elicitation.url, LINK.href);
  assert.match(elicitation.elicitationId, /^[0-9a-f-]{36}$/);
  assert.equal(typeof elicitation.message, 'string');
}

describe('the connection-required answer', () => {
  it('2026-07-28 with URL elicitation: an input-required result with the URL elicitation and a requestState', async () => {
    const { status, response, made } = await answer(call(STATELESS_META(URL_CAPS)), true);
    assert.equal(status, 200);
    assert.deepEqual(response, {
      jsonrpc: '2.0',
      id: 7,
      result: {
        resultType: 'input_required',
        inputRequests: { [CONNECT_INPUT_KEY]: { method: 'elicitation/create', params: { mode: 'url', message: 'Your account at the MCP server "notes" is not connected. Open the link to connect it.', url: LINK.href } } },
        requestState: 'mcpg1.state-1',
      },
    });
    assert.deepEqual(made, { links: 1, states: 1 });
    for (const method of ['prompts/get', 'resources/read']) assert.equal(((await answer(call(STATELESS_META(URL_CAPS), method), true)).response as any).result.resultType, 'input_required');
  });

  it('2025-11-25 with URL elicitation: error -32042 with one URL elicitation carrying an elicitationId', async () => {
    const { status, response, made } = await answer(call(), true);
    assert.equal(status, 200);
    const error = (response as any).error;
    assert.equal(error.code, JsonRpcErrorCode.UrlElicitationRequired);
    assert.equal(error.code, -32042);
    assert.equal(error.data.elicitations.length, 1);
    const [elicitation] = error.data.elicitations;
    assert.equal(elicitation.mode, 'url');
    assert.equal(elicitation.url, LINK.href);
    assert.match(elicitation.elicitationId, /^[0-9a-f-]{36}$/);
    assert.match(elicitation.message, /not connected/);
    assert.equal(made.states, 0, 'no requestState in 2025');
  });

  it('without URL elicitation: a tool error result with the link and "retry"; 2026 results say resultType complete', async () => {
    const legacy = await answer(call(), false);
    assert.equal(legacy.status, 200);
    const result = (legacy.response as any).result;
    assert.equal(result.isError, true);
    assert.equal(result.resultType, undefined);
    assert.match(result.content[0].text, new RegExp(`${LINK.href}.*retry`));
    const modern = await answer(call(STATELESS_META({ elicitation: {} })), false);
    assert.equal((modern.response as any).result.resultType, 'complete');
    assert.equal((modern.response as any).result.isError, true);
  });

  it('other methods without URL elicitation: error -32042 with the link in words and a well-formed data.elicitations', async () => {
    for (const method of ['completion/complete', 'prompts/get', 'resources/read']) {
      const { status, response } = await answer({ jsonrpc: '2.0', id: 'x', method, params: {} }, false);
      assert.equal(status, 200);
      assertUrlElicitationRequired(response);
      assert.match((response as any).error.message, /Open https:\/\/gateway\.example\/connect\/abc .*retry/);
    }
    // A 2026-07-28 request the input-required pattern does not cover, with or without URL elicitation: the same.
    for (const declared of [true, false]) assertUrlElicitationRequired((await answer({ jsonrpc: '2.0', id: 2, method: 'completion/complete', params: { _meta: STATELESS_META(declared ? URL_CAPS : {}) } }, declared)).response);
  });

  it('GET, DELETE and notifications: what the transport expects, with no body and no link made', async () => {
    const stream = await connectionRequiredAnswer({ message: undefined, urlElicitation: false, httpMethod: 'GET' }, { error: new ConnectionRequiredError('notes', 'not_connected'), link: () => assert.fail('no link for a GET'), mintState: () => assert.fail('no state') });
    assert.deepEqual({ status: stream.status, response: stream.response, headers: stream.headers }, { status: 405, response: undefined, headers: { Allow: 'POST, DELETE' } });
    const ended = await answer(undefined, true).catch(() => undefined);
    assert.equal(ended?.status, 405, 'no method named: a GET');
    const deleted = await connectionRequiredAnswer({ message: undefined, urlElicitation: true, httpMethod: 'DELETE' }, { error: new ConnectionRequiredError('notes', 'expired'), link: () => assert.fail('no link for a DELETE'), mintState: () => assert.fail('no state') });
    assert.deepEqual({ status: deleted.status, response: deleted.response }, { status: 200, response: undefined });
    const notified = await answer({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, false);
    assert.deepEqual({ status: notified.status, response: notified.response, links: notified.made.links }, { status: 202, response: undefined, links: 0 });
  });

  it('a 2026-07-28 request the input-required pattern does not cover never gets one', async () => {
    const { response, made } = await answer({ jsonrpc: '2.0', id: 1, method: 'completion/complete', params: { _meta: STATELESS_META(URL_CAPS) } }, true);
    assert.equal((response as any).error.code, JsonRpcErrorCode.UrlElicitationRequired);
    assert.equal(made.states, 0);
  });

  it('lists: empty, with a _meta note and the link for show, bare for hide', async () => {
    const list: JsonRpcMessage = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: STATELESS_META(URL_CAPS) } };
    const shown = await answer(list, true);
    assert.equal(shown.status, 200);
    assert.deepEqual((shown.response as any).result.tools, []);
    assert.equal((shown.response as any).result.resultType, 'complete');
    assert.equal((shown.response as any).result._meta[CONNECT_INPUT_KEY].url, LINK.href);
    const hidden = await answer({ jsonrpc: '2.0', id: 4, method: 'resources/templates/list' }, true, { lists: 'hide' });
    assert.deepEqual((hidden.response as any).result, { resourceTemplates: [] });
    assert.equal(hidden.made.links, 0, 'no ticket for a hidden list');
  });

  it('names the reason: expired, and a step-up with its printable scopes only', async () => {
    const expired = await answer(call(), false, { error: new ConnectionRequiredError('', 'expired') });
    assert.match((expired.response as any).result.content[0].text, /connection to the upstream MCP server has expired/);
    const stepUp = await answer(call(), false, { error: new ConnectionRequiredError('', 'insufficient_scope', 'notes:write bad"quote') });
    const text = (stepUp.response as any).result.content[0].text as string;
    assert.match(text, /lacks the permissions this request needs \(notes:write\)/);
    assert.ok(!text.includes('"quote'));
  });

  it('reads the declared capabilities', () => {
    assert.equal(declaresUrlElicitation({ elicitation: { url: {} } }), true);
    assert.equal(declaresUrlElicitation({ elicitation: {} }), false);
    assert.equal(declaresUrlElicitation({ elicitation: { url: true } }), false);
    assert.equal(declaresUrlElicitation(undefined), false);
    assert.deepEqual(requestCapabilities(call(STATELESS_META(URL_CAPS))), URL_CAPS);
  });
});
