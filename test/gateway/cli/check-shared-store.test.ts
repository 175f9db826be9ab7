// `mcp-oauth-guard check` with MCP_AUTH_REDIS_URL, run as the real CLI against a real redis-server (with a password)
// and a real authorization server: the line says whether the gateway's own Redis calls work, never with the password.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { freePort } from '../../helpers/free-port.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../helpers/redis-server.js';
import { runGatewayCli } from '../../helpers/run-cli.js';

const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
const PASSWORD = 'check-s3cret-pw';

interface Report {
  exitCode: number;
  results: { check: string; status: string; subject?: string; message: string; fix?: string }[];
}

describe('mcp-oauth-guard check: the shared store (Redis)', { skip, timeout: 60_000 }, () => {
  let as: AuthorizationServer;
  let redis: TestRedis;
  let closedPort: number;

  before(async () => {
    as = await startAuthorizationServer();
    redis = await startTestRedis({ args: ['--requirepass', PASSWORD] });
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    closedPort = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, 'close');
  });
  after(async () => {
    await as?.close();
    if (redis) await removeTestRedis(redis);
  });

  const check = async (redisUrl: string): Promise<{ report: Report; line: Report['results'][number] | undefined; text: string }> => {
    // A free port, not a fixed one: check binds the port for a moment, and the other check tests, which may run at
    // the same time, bind 3000.
    const run = await runGatewayCli(['check', '--json'], { MCP_AUTH_ISSUER: as.issuer, PORT: String(await freePort()), MCP_AUTH_REDIS_URL: redisUrl, MCP_AUTH_HTTP_TIMEOUT_MS: '2000' });
    assert.equal(run.stderr, '');
    const report = JSON.parse(run.stdout) as Report;
    assert.equal(run.code, report.exitCode);
    return { report, line: report.results.find((result) => result.check === 'shared store'), text: run.stdout + run.stderr };
  };

  it('a Redis the gateway can use: ok, after the issuer lines, and the password is never printed', async () => {
    const { report, line, text } = await check(`redis://:${PASSWORD}@127.0.0.1:${redis.port}`);
    assert.equal(report.exitCode, 0, text);
    assert.deepEqual(
      report.results.map((result) => result.check),
      ['resource', 'listen', 'issuer', 'authorization server', 'keys', 'shared store', 'upstream', 'policy'],
    );
    assert.deepEqual(line, {
      check: 'shared store',
      subject: `redis://127.0.0.1:${redis.port}`,
      status: 'ok',
      message: 'reachable: a DPoP replay claim and a rate-limit count succeeded (their keys expire within 5 s)',
    });
    assert.ok(!text.includes(PASSWORD), 'the password is not printed');
  });

  it('credentials refused, or none given: FAIL saying so, with the fix, and no password printed', async () => {
    for (const url of [`redis://:not-the-password@127.0.0.1:${redis.port}`, `redis://127.0.0.1:${redis.port}`]) {
      const { report, line, text } = await check(url);
      assert.equal(report.exitCode, 1, text);
      assert.equal(line?.status, 'fail');
      assert.match(line!.message, /^Redis refused the credentials \((WRONGPASS|NOAUTH) /, url);
      assert.equal(line!.fix, 'correct the user and password in MCP_AUTH_REDIS_URL (redis://user:password@host:port)');
      assert.ok(!text.includes('not-the-password') && !text.includes(PASSWORD), 'no password printed');
    }
  });

  it("a Redis user not allowed the rate limiter's scripts: FAIL naming the commands to allow", async () => {
    const { Redis } = await import('ioredis');
    const admin = new Redis(`redis://:${PASSWORD}@127.0.0.1:${redis.port}`, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await admin.connect();
    try {
      await admin.call('ACL', 'SETUSER', 'noscripts', 'on', '>noscripts-pw', '~*', '+@all', '-eval', '-evalsha');
    } finally {
      admin.disconnect();
    }
    const { report, line, text } = await check(`redis://noscripts:noscripts-pw@127.0.0.1:${redis.port}`);
    assert.equal(report.exitCode, 1, text);
    assert.match(line!.message, /^a rate-limit count failed: the Redis user may not run a command the gateway needs \(.*NOPERM/);
    assert.match(line!.fix!, /^allow the user SET, EVAL, EVALSHA/);
    assert.ok(!text.includes('noscripts-pw'), 'no password printed');
  });

  it('nothing listening: FAIL within the timeout, exit 1; rediss:// to a Redis without TLS says so', async () => {
    const started = Date.now();
    const { report, line, text } = await check(`redis://127.0.0.1:${closedPort}`);
    assert.equal(report.exitCode, 1, text);
    assert.equal(line?.status, 'fail');
    assert.match(line!.message, /^Redis cannot be reached \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/);
    assert.equal(line!.fix, 'check the host and port of MCP_AUTH_REDIS_URL, and that this host can reach Redis');
    assert.ok(Date.now() - started < 20_000, 'bounded by the check timeout');
    const tls = await check(`rediss://:${PASSWORD}@127.0.0.1:${redis.port}`);
    assert.equal(tls.report.exitCode, 1, tls.text);
    assert.match(tls.line!.message, /^no TLS connection \(no connection within 2000 ms\)$/);
    assert.match(tls.line!.fix!, /^a rediss:\/\/ URL needs a Redis that speaks TLS on that port/);
  });
});
