// Discovery of an upstream's authorization server: the RFC 8414 metadata must allow the connect flow (endpoints,
// PKCE S256, secure URLs), else the server is refused with a stable code.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { checkAuthorizationServerMetadata, createUpstreamAuthorizationServerDiscovery } from '../../../../src/gateway/connected/oauth/upstream-authorization-server.js';
import { UpstreamAuthorizationError } from '../../../../src/gateway/connected/oauth/upstream-authorization-error.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof UpstreamAuthorizationError ? error.code : String(error);
  }
};

describe('upstream authorization server metadata', { timeout: 10_000 }, () => {
  let server: Server;
  let issuer: string;
  let methods: string[] | undefined;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/.well-known/oauth-authorization-server') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, ...(methods ? { code_challenge_methods_supported: methods } : {}) }),
      );
    });
    issuer = await listenOnLoopback(server);
  });
  after(() => closeServer(server));

  it('accepts a server listing S256 or listing nothing, refuses one listing methods without S256', async () => {
    const discover = (): Promise<unknown> => createUpstreamAuthorizationServerDiscovery({ target: async () => ({ issuer, resource: 'http://127.0.0.1:1/mcp' }), timeoutMs: 2_000 })();
    methods = ['plain', 'S256'];
    assert.equal(((await discover()) as { metadata: { issuer: string } }).metadata.issuer, issuer);
    methods = undefined;
    assert.equal(((await discover()) as { target: { resource: string } }).target.resource, 'http://127.0.0.1:1/mcp');
    methods = ['plain'];
    await assert.rejects(discover(), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'unsupported' && /S256/.test(error.message));
  });

  it('refuses missing endpoints and insecure ones, and says unavailable or unsupported for bad issuers', async () => {
    const base = { issuer: 'https://as.example.test', authorization_endpoint: 'https://as.example.test/auth', token_endpoint: 'https://as.example.test/token' };
    assert.equal(code(() => checkAuthorizationServerMetadata(base)), undefined);
    assert.equal(code(() => checkAuthorizationServerMetadata({ ...base, authorization_endpoint: undefined })), 'unsupported');
    assert.equal(code(() => checkAuthorizationServerMetadata({ ...base, token_endpoint: undefined })), 'unsupported');
    assert.equal(code(() => checkAuthorizationServerMetadata({ ...base, revocation_endpoint: 'http://as.example.test/revoke' })), 'unsupported');
    const unreachable = createUpstreamAuthorizationServerDiscovery({ target: async () => ({ issuer: 'http://127.0.0.1:1', resource: 'http://127.0.0.1:1/mcp' }), timeoutMs: 1_000 });
    await assert.rejects(unreachable(), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'unavailable');
    const insecure = createUpstreamAuthorizationServerDiscovery({ target: async () => ({ issuer: 'http://as.example.test', resource: 'https://mcp.example.test/mcp' }), timeoutMs: 1_000 });
    await assert.rejects(insecure(), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'unsupported');
  });
});
