// The token exchange cache: one exchange per caller token, bounded by entries and bytes, never kept past the
// caller token's expiry, and renewed once after a 401. The token client is a stand-in that counts requests;
// the exchange itself against a real authorization server is in upstream-auth.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { tokenExchangeCredentials } from '../../../src/gateway/upstream-auth/token-exchange.js';
import type { UpstreamTokenClient } from '../../../src/gateway/upstream-auth/upstream-token-client.js';
import { clientCredentials } from '../../../src/gateway/upstream-auth/upstream-credentials.js';

function countingClient(): UpstreamTokenClient & { requests: Record<string, string>[] } {
  const requests: Record<string, string>[] = [];
  return {
    requests,
    configured: () => Promise.resolve(),
    async request(build) {
      const { parameters } = build({ issuer: 'https://as.example.com', resource: 'https://upstream.example.com/mcp' });
      requests.push(parameters);
      return { accessToken: `issued-${requests.length}`, expiresAt: Date.now() + 3_600_000 };
    },
  };
}

const caller = (token: string, expiresInSeconds = 3600): AuthInfo =>
  ({ token, clientId: 'c', scopes: [], expiresAt: Math.floor(Date.now() / 1000) + expiresInSeconds, extra: {} }) as unknown as AuthInfo;

describe('token exchange credentials', () => {
  it('exchanges each caller token once, concurrent requests included, with the RFC 8693 parameters', async () => {
    const tokens = countingClient();
    const credentials = tokenExchangeCredentials(tokens, { scope: 'notes:read' });
    const alice = caller('alice-token');
    const [a, b] = await Promise.all([credentials.authorization(alice), credentials.authorization(alice)]);
    assert.equal(a, 'Bearer issued-1');
    assert.equal(b, a);
    assert.equal(await credentials.authorization(alice), a);
    assert.deepEqual(tokens.requests, [
      { subject_token: 'alice-token', subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', requested_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'notes:read' },
    ]);
    assert.equal(await credentials.authorization(caller('bob-token')), 'Bearer issued-2');
  });

  it('keeps at most maxEntries, the least recently used leaving first', async () => {
    const tokens = countingClient();
    const credentials = tokenExchangeCredentials(tokens, { maxEntries: 2 });
    const [one, two, three] = [caller('one'), caller('two'), caller('three')];
    await credentials.authorization(one);
    await credentials.authorization(two);
    await credentials.authorization(one); // one is now the most recently used
    await credentials.authorization(three); // evicts two
    assert.equal(credentials.size, 2);
    assert.equal(tokens.requests.length, 3);
    await credentials.authorization(one);
    assert.equal(tokens.requests.length, 3);
    await credentials.authorization(two);
    assert.equal(tokens.requests.length, 4);
  });

  it('keeps nothing larger than maxBytes', async () => {
    const tokens = countingClient();
    const credentials = tokenExchangeCredentials(tokens, { maxBytes: 100 });
    await credentials.authorization(caller('a'));
    await credentials.authorization(caller('a'));
    assert.equal(credentials.size, 0);
    assert.equal(tokens.requests.length, 2);
  });

  it('does not reuse an exchanged token past the caller token expiry', async () => {
    const tokens = countingClient();
    const credentials = tokenExchangeCredentials(tokens);
    const expiring = caller('expiring', 0);
    await credentials.authorization(expiring);
    await credentials.authorization(expiring);
    assert.equal(tokens.requests.length, 2);
  });

  it('renews after a 401 once, and a 401 for a token already replaced uses the replacement', async () => {
    const tokens = countingClient();
    const credentials = tokenExchangeCredentials(tokens);
    const alice = caller('alice-token');
    const first = await credentials.authorization(alice);
    const [renewed, again] = await Promise.all([credentials.renew(alice, first), credentials.renew(alice, first)]);
    assert.equal(renewed, 'Bearer issued-2');
    assert.equal(again, renewed);
    assert.equal(await credentials.renew(alice, first), renewed);
    assert.equal(tokens.requests.length, 2);
  });
});

describe('client credentials', () => {
  it('one token for every caller, one request for concurrent ones, renewed once per rejected token', async () => {
    const tokens = countingClient();
    const credentials = clientCredentials(tokens, 'notes:read');
    const values = await Promise.all([credentials.authorization(caller('x')), credentials.authorization(caller('y'))]);
    assert.deepEqual(values, ['Bearer issued-1', 'Bearer issued-1']);
    assert.deepEqual(tokens.requests, [{ scope: 'notes:read' }]);
    const [a, b] = await Promise.all([credentials.renew(caller('x'), values[0]!), credentials.renew(caller('y'), values[0]!)]);
    assert.equal(a, 'Bearer issued-2');
    assert.equal(b, a);
    assert.equal(tokens.requests.length, 2);
  });
});
