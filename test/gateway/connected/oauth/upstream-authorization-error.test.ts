// Sorting openid-client's failures of a refresh grant, from a real token endpoint on loopback: an OAuth error answer
// is a refusal (the connection is then given up), while no answer, a 5xx, a 429 or `temporarily_unavailable` is
// `unavailable` (transient: the connection is kept). The server's error description never reaches the error.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as client from 'openid-client';
import { configuredClientSetting, upstreamAuthorizationFailure } from '../../../../src/gateway/connected/oauth/upstream-authorization-error.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

describe('upstream authorization failures of a refresh', { timeout: 10_000 }, () => {
  let server: Server;
  let config: client.Configuration;
  let answer: { status: number; body: string; headers?: Record<string, string> } = { status: 200, body: '{}' };
  before(async () => {
    server = createServer((_req, res) => res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body));
    const issuer = await listenOnLoopback(server);
    config = new client.Configuration({ issuer, token_endpoint: `${issuer}/token` }, 'gw', undefined, client.ClientSecretBasic('secret'));
    client.allowInsecureRequests(config);
  });
  after(() => closeServer(server));

  const failureOf = async (status: number, body: unknown, headers?: Record<string, string>) => {
    answer = { status, body: JSON.stringify(body), ...(headers ? { headers } : {}) };
    const error = await client.refreshTokenGrant(config, 'refresh-token-value').then(
      () => assert.fail('the grant succeeded'),
      (failure: unknown) => failure,
    );
    return upstreamAuthorizationFailure(error, 'the refresh');
  };

  it('an OAuth error answer is refused:<error>, whatever the error', async () => {
    for (const error of ['invalid_grant', 'invalid_client', 'unauthorized_client', 'invalid_scope']) {
      const failure = await failureOf(400, { error, error_description: 'echo refresh-token-value' });
      assert.equal(failure.code, `refused:${error}`);
      assert.ok(!failure.message.includes('refresh-token-value'));
    }
    const challenge = await failureOf(401, { error: 'invalid_client' }, { 'www-authenticate': 'Basic realm="as"' });
    assert.equal(challenge.code, 'refused:invalid_client');
    assert.equal((await failureOf(400, { error: 'bad"code' })).code, 'refused:error', 'a code that may not be repeated is not');
  });

  it('a 5xx, a 429 and temporarily_unavailable are unavailable', async () => {
    assert.equal((await failureOf(503, { error: 'server_error' })).code, 'unavailable');
    assert.equal((await failureOf(429, { error: 'slow_down' })).code, 'unavailable');
    assert.equal((await failureOf(400, { error: 'temporarily_unavailable' })).code, 'unavailable');
  });

  it('names the setting to check for a refused configured client, as the operator wrote it; none for a client the gateway made', () => {
    const configured = { kind: 'pre-registered' as const, clientSecret: 'x' };
    assert.equal(configuredClientSetting('', configured, 'invalid_client'), 'MCP_AUTH_UPSTREAM_CLIENT_SECRET');
    assert.equal(configuredClientSetting('', { kind: 'pre-registered' }, 'invalid_client'), 'MCP_AUTH_UPSTREAM_CLIENT_ID');
    assert.equal(configuredClientSetting('', configured, 'unauthorized_client'), 'MCP_AUTH_UPSTREAM_CLIENT_ID');
    assert.equal(configuredClientSetting('notes', configured, 'invalid_client'), 'servers.notes.auth.clientSecretEnv or auth.clientSecretFile');
    assert.equal(configuredClientSetting('', configured, 'invalid_grant'), undefined);
    assert.equal(configuredClientSetting('', { kind: 'dynamic' }, 'invalid_client'), undefined);
  });
});
