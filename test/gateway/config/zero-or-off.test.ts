// Every setting where 0 means none (no bound, nothing kept, nothing reused) takes off for the same, by the one rule
// of off, from the environment, a flag and the configuration file; a setting where 0 is a value of its own (a port
// picked by the system, no clock skew tolerated) still refuses off.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GATEWAY_SETTINGS, loadGatewayConfig, parseGatewayArgs } from '../../../src/gateway/config/gateway-config.js';
import { problemsOf } from '../../helpers/configuration-problems.js';
import { NODE_SERVER, quote } from '../../helpers/stdio-gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'zero-or-off-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const base = { MCP_AUTH_ISSUER: 'http://127.0.0.1:9', HOST: '127.0.0.1', PORT: '0' };
const http = { ...base, MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' };
const stdio = { ...base, MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}`, PATH: process.env.PATH ?? '' };
const introspection = { MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's3cret' };

describe('settings where zero means none take off', () => {
  it('MCP_AUTH_UPSTREAM_REPLAY_BYTES, MCP_AUTH_HEAP_GROWING_PERCENT, MCP_AUTH_INTROSPECTION_CACHE_TTL: off (any case) is 0, and 0 stays 0', () => {
    for (const value of ['off', 'OFF', ' Off ', '0']) {
      assert.equal(loadGatewayConfig({ ...stdio, MCP_AUTH_UPSTREAM_REPLAY_BYTES: value }).stdio?.replayBufferBytes, 0, value);
      assert.equal(loadGatewayConfig({ ...http, MCP_AUTH_HEAP_GROWING_PERCENT: value }).heapGrowingPercent, 0, value);
      assert.equal(loadGatewayConfig({ ...http, ...introspection, MCP_AUTH_INTROSPECTION_CACHE_TTL: value }).guard.introspection?.cacheTtlSeconds, 0, value);
    }
    // A count is read as before.
    assert.equal(loadGatewayConfig({ ...stdio, MCP_AUTH_UPSTREAM_REPLAY_BYTES: '4096' }).stdio?.replayBufferBytes, 4096);
    assert.equal(loadGatewayConfig({ ...http, MCP_AUTH_HEAP_GROWING_PERCENT: '150' }).heapGrowingPercent, 150);
    assert.equal(loadGatewayConfig({ ...http, ...introspection, MCP_AUTH_INTROSPECTION_CACHE_TTL: '30' }).guard.introspection?.cacheTtlSeconds, 30);
  });

  it('their flags take off too', () => {
    const args = parseGatewayArgs(['--upstream-replay-bytes', 'off', '--heap-growing-percent=off'], stdio);
    assert.ok(!args.help);
    const config = loadGatewayConfig(args.settings);
    assert.equal(config.stdio?.replayBufferBytes, 0);
    assert.equal(config.heapGrowingPercent, 0);
  });

  it('a bad value names off as the other choice', () => {
    assert.deepEqual(problemsOf(() => loadGatewayConfig({ ...stdio, MCP_AUTH_UPSTREAM_REPLAY_BYTES: 'none', MCP_AUTH_HEAP_GROWING_PERCENT: '5000' })), [
      'MCP_AUTH_HEAP_GROWING_PERCENT: must be a whole number from 0 to 1000 (got "5000"); or off to disable',
      'MCP_AUTH_UPSTREAM_REPLAY_BYTES: must be a whole number from 0 to 1073741824 (got "none"); or off to disable',
    ]);
  });

  it('in the configuration file: "off" and false, in the gateway section and in a server\'s limits', () => {
    for (const off of ['off', false]) {
      const file = join(dir, `config-${String(off)}.json`);
      const server = { command: [process.execPath, NODE_SERVER], limits: { replayBytes: off } };
      writeFileSync(file, JSON.stringify({ gateway: { issuer: base.MCP_AUTH_ISSUER, heapGrowingPercent: off }, servers: { notes: server } }));
      const config = loadGatewayConfig({ PATH: process.env.PATH ?? '', MCP_AUTH_CONFIG: file });
      assert.equal(config.heapGrowingPercent, 0);
      assert.equal(config.servers?.[0]?.stdio?.replayBufferBytes, 0);
    }
  });

  it('a setting where 0 is a value of its own still refuses off', () => {
    const problems = problemsOf(() => loadGatewayConfig({ ...http, PORT: 'off', MCP_AUTH_CLOCK_TOLERANCE: 'off', MCP_AUTH_SHUTDOWN_TIMEOUT_MS: 'off' }));
    assert.deepEqual(problems.map((problem) => problem.split(':')[0]).sort(), ['PORT', 'MCP_AUTH_CLOCK_TOLERANCE', 'MCP_AUTH_SHUTDOWN_TIMEOUT_MS'].sort());
    assert.ok(problems.every((problem) => !problem.includes('or off')), problems.join('\n'));
  });

  it('the table shows off in the value of each, and only of settings that take it', () => {
    const takesOff = (env: string): boolean => GATEWAY_SETTINGS.find((setting) => setting.env === env)!.value.includes('|off>');
    for (const env of ['MCP_AUTH_UPSTREAM_REPLAY_BYTES', 'MCP_AUTH_HEAP_GROWING_PERCENT', 'MCP_AUTH_INTROSPECTION_CACHE_TTL', 'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS']) assert.ok(takesOff(env), env);
    for (const env of ['PORT', 'MCP_AUTH_CLOCK_TOLERANCE', 'MCP_AUTH_SHUTDOWN_TIMEOUT_MS', 'MCP_AUTH_METRICS_PORT']) assert.ok(!takesOff(env), env);
  });
});
