// `npm run auth-server` and `npm run token` as a developer runs them: the server stays up and says what to paste;
// the token it hands out verifies for the resource it was asked for, and only that one.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { decodeJwt } from 'jose';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startAuthorizationServer } from '../../examples/dev/authorization-server.js';
import { createTokenVerifier } from '../../src/core/token/create-token-verifier.js';
import { InvalidTokenError } from '../../src/core/kernel/errors.js';
import { assertGuardError } from '../helpers/assert-guard-error.js';
import { freePort } from '../helpers/free-port.js';
import { runScript, startScript, type StartedProcess } from '../helpers/run-cli.js';

const AUTH_SERVER = fileURLToPath(new URL('../../examples/dev/auth-server.ts', import.meta.url));
const TOKEN = fileURLToPath(new URL('../../examples/dev/token.ts', import.meta.url));
const RESOURCE = 'http://127.0.0.1:8080/mcp';
const OTHER = 'http://127.0.0.1:8081/other';

describe('npm run auth-server and npm run token', () => {
  let server: StartedProcess;
  let banner = '';
  let issuer: string;

  before(async () => {
    server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', `${RESOURCE},${OTHER}`, '--scopes', 'calc:use,calc:admin', '--user', 'alice:wonder'], 'Ctrl-C stops it.');
    banner = server.output();
    issuer = /authorization server \(development only\): (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? '';
    assert.ok(issuer, banner);
  });
  after(async () => {
    await server?.stop();
  });

  it('stays up and prints its issuer, its users and ready-to-paste lines for the gateway, the example and a token', () => {
    assert.ok(banner.includes('users:      alice / wonder'), banner);
    // The gateway listens where the resource says (its metadata names that URL) and applies the policy.
    assert.ok(banner.includes(`npx mcp-oauth-guard --issuer ${issuer} --resource ${RESOURCE} --port 8080 --policy policy.json --upstream http://127.0.0.1:3001/mcp`), banner);
    assert.ok(banner.includes(`MCP_AUTH_ISSUER=${issuer} MCP_AUTH_RESOURCE=${RESOURCE} PORT=8080 npm run example`), banner);
    assert.ok(banner.includes(`npm run -s token -- --issuer ${issuer} --resource ${RESOURCE} --scope "calc:use calc:admin"`), banner);
    assert.equal(server.child.exitCode, null, 'still running');
  });

  it('advertises only the scopes it was started with', async () => {
    const metadata = (await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()) as { scopes_supported: string[] };
    assert.ok(metadata.scopes_supported.includes('calc:use'));
    assert.ok(!metadata.scopes_supported.some((scope) => scope.startsWith('notes:')), metadata.scopes_supported.join(' '));
  });

  it('hands out a token whose aud is the resource asked for, which the guard accepts there and nowhere else', { timeout: 30_000 }, async () => {
    const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', issuer, '--resource', RESOURCE, '--scope', 'calc:use']);
    assert.equal(code, 0, stderr);
    const token = stdout.trim();
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'one JWT and nothing else on stdout');
    const auth = await createTokenVerifier({ issuer, resource: RESOURCE }).verify(token);
    assert.deepEqual(auth.scopes, ['calc:use']);
    await assertGuardError(createTokenVerifier({ issuer, resource: OTHER }).verify(token), InvalidTokenError, 'token_audience', 401);
  });

  it('refuses a resource it was not started with, and explains, naming the issuer it asked', { timeout: 30_000 }, async () => {
    const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', issuer, '--resource', 'http://127.0.0.1:9/elsewhere']);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.match(stderr, /invalid_target/);
    assert.ok(stderr.includes(`from the issuer ${issuer} `), stderr);
  });

  it('warns on stderr, naming both, when the scope granted is not the one asked for (a misspelt scope is dropped)', { timeout: 30_000 }, async () => {
    const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', issuer, '--resource', RESOURCE, '--scope', 'calc:use,calc:usr']);
    assert.equal(code, 0, stderr);
    assert.match(stdout.trim(), /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the token is still printed, alone on stdout');
    assert.ok(stderr.includes(`asked ${issuer} for scope "calc:use calc:usr" but was granted "calc:use"`), stderr);
    const exact = await runScript(TOKEN, ['--issuer', issuer, '--resource', RESOURCE, '--scope', 'calc:admin calc:use']);
    assert.equal(exact.code, 0, exact.stderr);
    assert.equal(exact.stderr, '', 'no warning when every scope asked for was granted, in any order');
  });
});

describe('npm run auth-server for a resource on localhost', () => {
  it('prints a gateway line that listens on that host and port', { timeout: 60_000 }, async () => {
    const server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', 'http://localhost:3000/mcp', '--scopes', 'calc:use'], 'Ctrl-C stops it.');
    try {
      assert.match(server.output(), /npx mcp-oauth-guard --issuer http:\/\/127\.0\.0\.1:\d+ --resource http:\/\/localhost:3000\/mcp --host localhost --port 3000 --policy policy\.json --upstream /);
    } finally {
      await server.stop();
    }
  });
});

describe('npm run auth-server on a port in use', () => {
  it('exits 1 with one line naming the port and --port', { timeout: 30_000 }, async () => {
    const taken = createServer();
    const port = await new Promise<number>((resolve) => taken.listen(0, '127.0.0.1', () => resolve((taken.address() as AddressInfo).port)));
    try {
      const { code, stdout, stderr } = await runScript(AUTH_SERVER, ['--port', String(port), '--resource', RESOURCE, '--scopes', 'calc:use']);
      assert.equal(code, 1, stderr);
      assert.equal(stdout, '');
      assert.equal(stderr, `auth-server: cannot start: port ${port} is in use; give a free one with --port\n`);
    } finally {
      taken.close();
    }
  });
});

describe('npm run token without a server', () => {
  it('names the issuer it could not reach', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', `http://127.0.0.1:${port}`, '--resource', RESOURCE]);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.ok(stderr.includes(`from the issuer http://127.0.0.1:${port} `), stderr);
  });
});

describe('npm run auth-server -- --claim', () => {
  it('puts each claim in the tokens npm run token prints, as JSON when it parses, else as text', { timeout: 60_000 }, async () => {
    const server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', RESOURCE, '--scopes', 'calc:use', '--claim', 'groups=["finance"]', '--claim', 'tenant=acme', '--claim', 'level=3'], 'Ctrl-C stops it.');
    try {
      const banner = server.output();
      assert.ok(banner.includes('claim:      groups=["finance"] in every access token'), banner);
      const issuer = /authorization server \(development only\): (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? '';
      const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', issuer, '--resource', RESOURCE, '--scope', 'calc:use']);
      assert.equal(code, 0, stderr);
      const token = stdout.trim();
      const claims = decodeJwt(token);
      assert.deepEqual([claims['groups'], claims['tenant'], claims['level']], [['finance'], 'acme', 3]);
      // The server's own claims are untouched, and the guard accepts the token with the extra claims in view.
      assert.deepEqual([claims.iss, claims.aud, claims['scope']], [issuer, RESOURCE, 'calc:use']);
      const auth = await createTokenVerifier({ issuer, resource: RESOURCE }).verify(token);
      assert.deepEqual(auth.extra.claims['groups'], ['finance']);
    } finally {
      await server.stop();
    }
  });

  it('refuses a claim the server sets itself, a malformed one, and one given twice, naming each', { timeout: 30_000 }, async () => {
    const run = await runScript(AUTH_SERVER, ['--resource', RESOURCE, '--scopes', 'calc:use', '--claim', 'sub=alice', '--claim', 'client_id=x', '--claim', 'nameonly', '--claim', 'tenant=a', '--claim', 'tenant=b']);
    assert.equal(run.code, 2, run.stdout);
    for (const problem of ['--claim: "sub" is set by the server and cannot be given (reserved: iss, aud, exp, iat, nbf, jti, sub, client_id, scope, cnf)', '--claim: "client_id" is set by the server', '--claim must be name=value', '--claim: "tenant" is given twice']) {
      assert.ok(run.stderr.includes(problem), `${problem} in ${run.stderr}`);
    }
    await assert.rejects(startAuthorizationServer({ extraClaims: { tenant: 'acme', exp: 1 } }), { name: 'TypeError', message: /extraClaims: "exp" is set by the server/ });
  });
});

describe('their command lines', () => {
  it('--help prints the usage; a missing --resource or --scopes, or a bad flag, exits 2 naming each problem', { timeout: 30_000 }, async () => {
    const help = await runScript(AUTH_SERVER, ['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: npm run auth-server/);
    const bad = await runScript(AUTH_SERVER, ['--port', 'x', '--scopes', 'a b"', '--nope', 'v']);
    assert.equal(bad.code, 2);
    for (const problem of ['--port must be a TCP port', '--scopes: "a b"" is not a scope token', '--nope is not a known flag', '--resource is required']) {
      assert.ok(bad.stderr.includes(problem), `${problem} in ${bad.stderr}`);
    }
    // --dpop is a switch: a value given to it (as the gateway's --dpop takes one) is a problem, never "on".
    for (const [args, problem] of [
      [['--dpop=no'], '--dpop takes no value (give it alone to turn it on), got "no"'],
      [['--dpop', 'require'], '--dpop takes no value, got "require"'],
    ] as const) {
      const run = await runScript(AUTH_SERVER, ['--resource', RESOURCE, '--scopes', 'calc:use', ...args]);
      assert.equal(run.code, 2, run.stdout);
      assert.ok(run.stderr.includes(problem), `${problem} in ${run.stderr}`);
    }
    const noScopes = await runScript(AUTH_SERVER, ['--resource', 'http://127.0.0.1:8080/mcp']);
    assert.equal(noScopes.code, 2);
    assert.match(noScopes.stderr, /--scopes is required/);
    // Its service client's secret is printed and public, and can exchange tokens: never reachable from elsewhere.
    for (const host of ['0.0.0.0', '192.0.2.1', '::']) {
      const exposed = await runScript(AUTH_SERVER, ['--host', host, '--resource', RESOURCE, '--scopes', 'calc:use']);
      assert.equal(exposed.code, 2, `--host ${host}: ${exposed.stdout}${exposed.stderr}`);
      assert.ok(exposed.stderr.includes(`--host must be a loopback address (127.0.0.1, ::1 or localhost), got "${host}"`), exposed.stderr);
    }
    const token = await runScript(TOKEN, []);
    assert.equal(token.code, 2);
    assert.match(token.stderr, /--resource is required/);
  });
});

describe('npm run auth-server -- --dpop, with the notes example and the PKCE client in DPoP mode', () => {
  it('prints the DPoP lines, and the printed commands run the whole flow with bound tokens and proofs', { timeout: 90_000 }, async () => {
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', resource, '--scopes', 'notes:read,notes:write', '--dpop'], 'Ctrl-C stops it.');
    let notes: StartedProcess | undefined;
    try {
      const banner = server.output();
      const issuer = /authorization server \(development only\): (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? '';
      assert.match(banner, /DPoP: {7}required of registered clients/);
      assert.ok(banner.includes(`MCP_AUTH_ISSUER=${issuer} MCP_AUTH_RESOURCE=${resource} MCP_AUTH_DPOP=require PORT=${port} npm run example`), banner);
      assert.ok(banner.includes(`--port ${port} --dpop require --policy policy.json`), banner);
      assert.ok(banner.includes(`npx tsx examples/demo/pkce-client.ts ${resource} --dpop --call whoami`), banner);

      notes = await startScript(fileURLToPath(new URL('../../examples/notes-server.ts', import.meta.url)), [], `notes MCP server: ${resource}`, {
        env: { ...process.env, MCP_AUTH_ISSUER: issuer, MCP_AUTH_RESOURCE: resource, MCP_AUTH_DPOP: 'require', PORT: String(port), HOST: '127.0.0.1' },
      });
      const client = await runScript(fileURLToPath(new URL('../../examples/demo/pkce-client.ts', import.meta.url)), [resource, '--dpop', '--headless', '--call', 'whoami'], { timeoutMs: 60_000 });
      assert.equal(client.code, 0, client.stderr);
      assert.match(client.stdout, /DPoP key made \(ES256\)/);
      assert.match(client.stdout, /tools\/call → 200 \(application\/json\), sent as Authorization: DPoP with a proof \(htm POST, htu http:\/\/127\.0\.0\.1:\d+\/mcp, ath = hash of the token\)/);
      assert.match(client.stdout, /whoami →/);
      // Without --dpop the client registers as one that must bind its tokens (dpop_bound_access_tokens), so the
      // authorization server refuses its code exchange, and the client says why.
      const bearer = await runScript(fileURLToPath(new URL('../../examples/demo/pkce-client.ts', import.meta.url)), [resource, '--headless'], { timeoutMs: 60_000 });
      assert.equal(bearer.code, 1, bearer.stderr);
      assert.match(bearer.stderr, /: invalid_grant \(/, "the authorization server's refusal, with its error code");
    } finally {
      await notes?.stop();
      await server.stop();
    }
  });
});

describe('npm run auth-server -- --client', () => {
  it('registers a confidential client from the start: its secret at the token endpoint, its exact redirect URIs, openid sign-in', { timeout: 60_000 }, async () => {
    const callback = 'http://127.0.0.1:8080/connect/callback';
    const server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', RESOURCE, '--scopes', 'mcp', '--client', `gw-login:s3cret-value:${callback},http://127.0.0.1:8080/other`], 'Ctrl-C stops it.');
    try {
      const banner = server.output();
      const issuer = /authorization server \(development only\): (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? '';
      assert.ok(banner.includes(`client:     gw-login (confidential, the secret given), redirect URIs ${callback} http://127.0.0.1:8080/other`), banner);
      assert.ok(!banner.includes('s3cret-value'), 'the secret is not printed');
      const metadata = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { token_endpoint: string; authorization_endpoint: string };
      const tokenWith = async (secret: string) => {
        const response = await fetch(metadata.token_endpoint, {
          method: 'POST',
          headers: { authorization: `Basic ${Buffer.from(`gw-login:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: callback, code_verifier: 'v'.repeat(43) }),
        });
        return ((await response.json()) as { error: string }).error;
      };
      assert.equal(await tokenWith('s3cret-value'), 'invalid_grant', 'the client and its secret are known');
      assert.equal(await tokenWith('wrong'), 'invalid_client');
      const authorize = (redirectUri: string) => {
        const url = new URL(metadata.authorization_endpoint);
        for (const [key, value] of Object.entries({ client_id: 'gw-login', redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 's'.repeat(20), nonce: 'n'.repeat(20), code_challenge: 'c'.repeat(43), code_challenge_method: 'S256' })) url.searchParams.set(key, value);
        return fetch(url, { redirect: 'manual' });
      };
      const signIn = await authorize(callback);
      assert.equal(signIn.status, 303, await signIn.text());
      assert.match(signIn.headers.get('location') ?? '', /\/interaction\//, 'on to the login page');
      assert.equal((await authorize('http://127.0.0.1:8080/connect/callback/elsewhere')).status, 400, 'only its exact redirect URIs');
    } finally {
      await server.stop();
    }
    const bad = await runScript(AUTH_SERVER, ['--resource', RESOURCE, '--scopes', 'mcp', '--client', 'gw-login:secret-only', '--client', 'x:y:ftp://h/cb']);
    assert.equal(bad.code, 2, bad.stdout);
    assert.ok(bad.stderr.includes('--client must be id:secret:redirect-uri[,redirect-uri…]'), bad.stderr);
    assert.ok(bad.stderr.includes('--client x: "ftp://h/cb" is not an http(s) redirect URI'), bad.stderr);
    assert.ok(!bad.stderr.includes('secret-only'), 'a refused secret is not repeated');
  });
});
