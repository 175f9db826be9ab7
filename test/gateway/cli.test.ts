import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawn, type ChildProcess } from '../helpers/child-process.js';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigurationError } from '../../src/core/kernel/errors.js';
import { DEFAULT_IDENTITY_HEADERS, GATEWAY_SETTINGS, loadGatewayConfig, parseGatewayArgs, parseIdentityHeaders } from '../../src/gateway/config/gateway-config.js';
import { REPOSITORY_ROOT, runGatewayCli, type CliRun } from '../helpers/run-cli.js';

const CLI = resolve(REPOSITORY_ROOT, 'src/gateway/cli.ts');
const ROOT = REPOSITORY_ROOT;

/** Runs the real CLI with a clean environment (see `runGatewayCli`). */
function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 15_000): Promise<CliRun> {
  return runGatewayCli(args, env, timeoutMs);
}

const children: ChildProcess[] = [];
const servers: Server[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function freeClosedPort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  s.close();
  await once(s, 'close');
  return port;
}

describe('mcp-oauth-guard CLI', () => {
  it('--version prints the package version alone and exits 0, for the gateway and for check', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const args of [['--version'], ['check', '--version']]) {
      const run = await runCli(args);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `${version}\n`);
      assert.equal(run.stderr, '');
    }
  });

  it('--help documents every setting, with its flag and variable, and exits 0', async () => {
    const run = await runCli(['--help']);
    assert.equal(run.code, 0);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /^Usage: mcp-oauth-guard/);
    for (const s of GATEWAY_SETTINGS) {
      assert.ok(run.stdout.includes(s.env), `--help names ${s.env}`);
      if (s.flag) assert.ok(run.stdout.includes(`${s.flag} `), `--help names ${s.flag}`);
    }
    for (const required of ['MCP_AUTH_UPSTREAM', 'MCP_AUTH_ISSUER', 'MCP_AUTH_RESOURCE', 'MCP_AUTH_POLICY', 'HOST', 'PORT', 'SIGTERM']) {
      assert.ok(run.stdout.includes(required), required);
    }
  });

  it('a configuration error is one line naming the setting and its flag, exit code 2, no stack', async () => {
    const run = await runCli(['--upstream', 'http://127.0.0.1:3001/mcp']);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      "mcp-oauth-guard: configuration error: MCP_AUTH_ISSUER (--issuer): is required: set it to your authorization server's issuer URL, e.g. https://auth.example.com (for a local one, in a clone of this repository: `npm run auth-server -- --resource <the MCP URL> --scopes <scopes>`)\n",
    );
  });

  it('reports a bad policy file and an unknown flag the same way', async () => {
    const policy = await runCli([], { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'http://127.0.0.1:9', MCP_AUTH_POLICY: '/nonexistent/policy.json' });
    assert.equal(policy.code, 2);
    assert.match(policy.stderr, /^mcp-oauth-guard: configuration error: MCP_AUTH_POLICY \(--policy\): policy file \/nonexistent\/policy.json does not exist/);
    assert.equal(policy.stderr.split('\n').length, 2);
    assert.doesNotMatch(policy.stderr, /\bat .*\.ts:\d+/);

    const unknown = await runCli(['--upstreem', 'x'], { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'http://127.0.0.1:9' });
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stderr, 'mcp-oauth-guard: configuration error: --upstreem: is not a known flag; did you mean --upstream?\n');
  });

  it('serves, logs one JSON line per request without the token, and exits 0 on SIGTERM', async () => {
    const upstream = createServer((_req, res) => res.writeHead(500).end());
    servers.push(upstream);
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const upstreamPort = (upstream.address() as AddressInfo).port;
    const issuerPort = await freeClosedPort();
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--port', '0', '--upstream', `http://127.0.0.1:${upstreamPort}/mcp`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', MCP_AUTH_ISSUER: `http://127.0.0.1:${issuerPort}`, MCP_AUTH_HTTP_TIMEOUT_MS: '500' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    // Until the CLI says it listens, or exits (then the parse below fails with what it printed).
    await new Promise<void>((resolveWait) => {
      const check = () => {
        if (!stdout.includes('"event":"listening"')) return;
        child.stdout!.off('data', check);
        resolveWait();
      };
      child.stdout!.on('data', check);
      child.once('exit', () => resolveWait());
    });
    const started = JSON.parse(stdout.split('\n')[0]!) as { event: string; url: string; resource: string };
    assert.equal(started.event, 'listening');
    assert.equal(started.resource, `${started.url}/mcp`, 'the default resource names the real port');

    const health = await fetch(`${started.url}/healthz`, { signal: AbortSignal.timeout(5000) });
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const denied = await fetch(`${started.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: 'Bearer not-a-real-token-0123456789' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } }),
      signal: AbortSignal.timeout(5000),
    });
    assert.ok(denied.status === 401 || denied.status === 503, `status ${denied.status}`);
    await denied.arrayBuffer();

    child.kill('SIGTERM');
    const [code] = (await Promise.race([once(child, 'exit'), new Promise((_, reject) => setTimeout(() => reject(new Error('no exit after SIGTERM')), 10_000))])) as [number];
    assert.equal(code, 0);
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const mcp = lines.find((l) => l.path === '/mcp');
    assert.ok(mcp, stdout);
    assert.equal(mcp.httpMethod, 'POST');
    assert.equal(mcp.method, 'tools/call');
    assert.equal(mcp.name, 'echo');
    assert.equal(mcp.decision, 'deny');
    assert.equal(mcp.status, denied.status);
    assert.equal(typeof mcp.durationMs, 'number');
    assert.ok(lines.some((l) => l.path === '/healthz' && l.status === 200));
    assert.ok(lines.some((l) => l.event === 'shutdown' && l.signal === 'SIGTERM'));
    assert.ok(!stdout.includes('not-a-real-token'), 'the token is never logged');
  });
});

describe('gateway configuration', () => {
  const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'https://auth.example.com' };

  it('flags mirror the environment and win over it, as --flag value or --flag=value', () => {
    const args = parseGatewayArgs(['--port', '9000', '--issuer=https://other.example.com', '--strict-jwt', '--identity-headers'], { ...base, PORT: '8000' });
    assert.equal(args.help, false);
    if (args.help) return;
    assert.equal(args.settings.PORT, '9000');
    assert.equal(args.settings.MCP_AUTH_ISSUER, 'https://other.example.com');
    assert.equal(args.settings.MCP_AUTH_STRICT_JWT, 'true');
    assert.equal(args.settings.MCP_AUTH_IDENTITY_HEADERS, 'on');
    const config = loadGatewayConfig(args.settings);
    assert.equal(config.port, 9000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.guard.issuer, 'https://other.example.com');
    assert.equal(config.guard.resource, 'http://127.0.0.1:9000/mcp');
    assert.equal(config.resourceIsDefault, true);
    assert.equal(config.guard.strictJwtAccessTokens, true);
    assert.deepEqual(config.proxy?.identityHeaders, DEFAULT_IDENTITY_HEADERS);
  });

  it('--dpop sets the DPoP mode; a wrong value is refused naming MCP_AUTH_DPOP', () => {
    const args = parseGatewayArgs(['--dpop', 'require'], base);
    assert.equal(args.help, false);
    if (args.help) return;
    assert.equal(args.settings.MCP_AUTH_DPOP, 'require');
    assert.equal(loadGatewayConfig(args.settings).guard.dpop, 'require');
    assert.throws(() => loadGatewayConfig({ ...base, MCP_AUTH_DPOP: 'maybe' }), (e: unknown) => (e as { setting?: string }).setting === 'MCP_AUTH_DPOP');
  });

  it('passes the session bounds to the proxy', () => {
    const args = parseGatewayArgs(['--max-sessions', '500', '--session-idle-timeout-ms=60000'], base);
    assert.equal(args.help, false);
    if (args.help) return;
    const config = loadGatewayConfig(args.settings);
    assert.equal(config.proxy?.maxSessions, 500);
    assert.equal(config.proxy?.sessionIdleTimeoutMs, 60_000);
  });

  it('applies defaults: port 8080, identity headers off, proxy timeouts left to the proxy', () => {
    const config = loadGatewayConfig(base);
    assert.equal(config.port, 8080);
    assert.equal(config.guard.resource, 'http://127.0.0.1:8080/mcp');
    assert.deepEqual(config.proxy, { upstream: 'http://127.0.0.1:3001/mcp' });
    assert.equal(config.shutdownTimeoutMs, 10_000);
  });

  it('names the setting at fault', () => {
    const setting = (fn: () => unknown): string => {
      try {
        fn();
      } catch (error) {
        assert.ok(error instanceof ConfigurationError);
        return error.setting;
      }
      assert.fail('expected a ConfigurationError');
    };
    assert.equal(setting(() => loadGatewayConfig({ MCP_AUTH_ISSUER: 'https://auth.example.com' })), 'MCP_AUTH_UPSTREAM');
    assert.equal(setting(() => loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM: 'ftp://x/mcp' })), 'MCP_AUTH_UPSTREAM');
    assert.equal(setting(() => loadGatewayConfig({ ...base, PORT: '70000' })), 'PORT');
    assert.equal(setting(() => loadGatewayConfig({ ...base, HOST: '0.0.0.0' })), 'MCP_AUTH_RESOURCE');
    assert.equal(setting(() => loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: 'soon' })), 'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS');
    assert.equal(setting(() => loadGatewayConfig({ ...base, MCP_AUTH_IDENTITY_HEADERS: 'subject=Authorization' })), 'MCP_AUTH_IDENTITY_HEADERS');
    assert.equal(setting(() => loadGatewayConfig({ ...base, MCP_AUTH_MAX_SESSIONS: '0' })), 'MCP_AUTH_MAX_SESSIONS');
    assert.equal(setting(() => loadGatewayConfig({ ...base, MCP_AUTH_SESSION_IDLE_TIMEOUT_MS: '1h' })), 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS');
    assert.equal(setting(() => parseGatewayArgs(['--port'], {})), '--port');
    assert.equal(setting(() => parseGatewayArgs(['--introspection-client-secret', 's3cret'], {})), '--introspection-client-secret');
  });

  it('reads identity headers as on, off, or a list of names', () => {
    assert.equal(parseIdentityHeaders(undefined), undefined);
    assert.equal(parseIdentityHeaders('off'), undefined);
    assert.deepEqual(parseIdentityHeaders('on'), DEFAULT_IDENTITY_HEADERS);
    assert.deepEqual(parseIdentityHeaders('subject=X-User, scopes=X-Scopes'), { subject: 'X-User', scopes: 'X-Scopes' });
    assert.throws(() => parseIdentityHeaders('user=X-User'), ConfigurationError);
    assert.throws(() => parseIdentityHeaders('subject='), ConfigurationError);
  });
});
