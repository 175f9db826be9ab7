// The gateway's settings cannot be silently wrong: an MCP_AUTH_* variable that is no setting is an error (with the one
// meant), the known names are the settings tables', and every bad flag and setting is reported in one error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigurationProblems } from '../../../src/core/kernel/configuration-problems.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { GUARD_ENV_VARIABLES, loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';
import { findUnknownSettings } from '../../../src/core/kernel/unknown-settings.js';
import { GATEWAY_SETTINGS, loadGatewayConfig, parseGatewayArgs } from '../../../src/gateway/config/gateway-config.js';
import { problemsOf } from '../../helpers/configuration-problems.js';

const dir = mkdtempSync(join(tmpdir(), 'gateway-problems-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'http://127.0.0.1:9', HOST: '127.0.0.1', PORT: '0' };

describe('gateway settings: unknown variables', () => {
  it('every guard variable is a row of the gateway settings table, so the two lists cannot disagree', () => {
    const table = new Set<string>(GATEWAY_SETTINGS.map((s) => s.env));
    for (const name of GUARD_ENV_VARIABLES) assert.ok(table.has(name), `${name} is read by the guard but is no gateway setting`);
  });

  it('every setting of the table is known: none is reported as unknown', () => {
    const settings: Record<string, string> = {};
    // Each name set (to a blank, which counts as unset, so that no value is checked) is accepted as a name.
    for (const s of GATEWAY_SETTINGS) settings[s.env] = ' ';
    const config = loadGatewayConfig({ ...settings, ...base });
    assert.equal(config.proxy?.upstream, base.MCP_AUTH_UPSTREAM);
  });

  it('a misspelt variable is refused with the variable meant; a gateway-only one is known', () => {
    assert.deepEqual(problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_COMAND: 'x' })), ['MCP_AUTH_UPSTREAM_COMAND: is not a setting; did you mean MCP_AUTH_UPSTREAM_COMMAND?']);
    assert.deepEqual(problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_METRIC_PORT: '9464' })), ['MCP_AUTH_METRIC_PORT: is not a setting; did you mean MCP_AUTH_METRICS_PORT?']);
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_METRICS_PORT: '0', MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '1000' }).metrics?.port, 0);
  });

  it("a gateway setting found by the library's loader is named as the gateway's; a typo of one is still no setting", () => {
    assert.deepEqual(findUnknownSettings({ MCP_AUTH_METRICS_PORT: '9464', MCP_AUTH_METRICS_PROT: '1', HOST: '0.0.0.0' }, GUARD_ENV_VARIABLES), [
      { name: 'MCP_AUTH_METRICS_PORT', gatewaySetting: true },
      { name: 'MCP_AUTH_METRICS_PROT' },
    ]);
    assert.deepEqual(problemsOf(() => loadOptionsFromEnv({ MCP_AUTH_ISSUER: 'https://as.example.com', MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp', MCP_AUTH_UPSTREAM: 'x' })), [
      'MCP_AUTH_UPSTREAM: is a setting of the gateway (npx mcp-oauth-guard), which this program does not read; unset it here',
    ]);
    // The gateway reads them all: none is unknown there.
    assert.deepEqual(findUnknownSettings({ MCP_AUTH_METRICS_PORT: '9464' }, GATEWAY_SETTINGS.map((setting) => setting.env)), []);
  });
});

describe('gateway settings: every problem at once', () => {
  it('unknown, bad numbers, a missing policy file, a missing issuer and upstream: one error naming each', () => {
    const lines = problemsOf(() =>
      loadGatewayConfig({
        HOST: '127.0.0.1',
        PORT: 'eighty',
        MCP_AUTH_POLICIES: 'policy.json',
        MCP_AUTH_POLICY: join(dir, 'absent.json'),
        MCP_AUTH_MAX_SESSIONS: '0',
        MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS: 'soon',
        MCP_AUTH_METRICS_HOST: '127.0.0.1',
      }),
    );
    assert.deepEqual(
      lines.map((line) => line.slice(0, line.indexOf(':'))),
      ['PORT', 'MCP_AUTH_METRICS_HOST', 'MCP_AUTH_UPSTREAM', 'MCP_AUTH_POLICIES', 'MCP_AUTH_POLICY', 'MCP_AUTH_ISSUER', 'MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS', 'MCP_AUTH_MAX_SESSIONS'],
    );
    assert.ok(lines.includes('PORT: must be a whole number from 0 to 65535 (got "eighty")'), lines.join('\n'));
    assert.ok(lines.includes('MCP_AUTH_POLICIES: is not a setting; did you mean MCP_AUTH_POLICY?'), lines.join('\n'));
    assert.ok(lines.some((line) => /^MCP_AUTH_POLICY: policy file .*absent\.json does not exist/.test(line)), lines.join('\n'));
    assert.ok(lines.some((line) => line.startsWith('MCP_AUTH_UPSTREAM: is required')), lines.join('\n'));
  });

  it('a stdio upstream: its command, its numbers and the HTTP-only settings it cannot use, all listed', () => {
    const lines = problemsOf(() =>
      loadGatewayConfig({
        ...base,
        MCP_AUTH_UPSTREAM: '',
        MCP_AUTH_UPSTREAM_COMMAND: 'no-such-program-for-this-test --stdio',
        MCP_AUTH_MAX_UPSTREAM_PROCESSES: '0',
        MCP_AUTH_IDENTITY_ENV: 'perhaps',
        MCP_AUTH_UPSTREAM_AUTH: 'static',
      }),
    );
    assert.deepEqual(
      lines.map((line) => line.slice(0, line.indexOf(':'))),
      ['MCP_AUTH_UPSTREAM_COMMAND', 'MCP_AUTH_MAX_UPSTREAM_PROCESSES', 'MCP_AUTH_IDENTITY_ENV', 'MCP_AUTH_UPSTREAM_AUTH'],
    );
  });

  it('one problem is the same one-setting error as ever', () => {
    assert.throws(
      () => loadGatewayConfig({ ...base, MCP_AUTH_MAX_SESSIONS: '0' }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_MAX_SESSIONS' && e.message === 'MCP_AUTH_MAX_SESSIONS: must be a whole number from 1 to 10000000 (got "0")' && e.problems.length === 1,
    );
  });

  it('bad flags: each one, with the flag likely meant, and its value not taken for another flag', () => {
    assert.deepEqual(problemsOf(() => parseGatewayArgs(['--polcy', 'policy.json', 'stray', '--port', '--upstream-token', 'x'], {})), [
      '--polcy: is not a known flag; did you mean --policy?',
      'stray: is not a flag; settings are given as --name value (see --help)',
      '--port: needs a value: --port <number>',
      '--upstream-token: is not accepted on the command line; set MCP_AUTH_UPSTREAM_TOKEN in the environment',
    ]);
    assert.deepEqual(problemsOf(() => parseGatewayArgs(['--zzzzzzzz'], {})), ['--zzzzzzzz: is not a known flag (see --help)']);
  });

  it('bad flags recorded with the settings\' problems, when the caller collects them', () => {
    const problems = new ConfigurationProblems();
    const args = parseGatewayArgs(['--issuer', 'http://127.0.0.1:9', '--upstreem', 'http://127.0.0.1:3001/mcp'], {}, problems);
    assert.equal(args.help, false);
    problems.check(() => loadGatewayConfig(args.help ? {} : args.settings));
    assert.throws(() => problems.throwIfAny(), (e: unknown) => e instanceof ConfigurationError && e.problems.map((p) => p.setting).join() === '--upstreem,MCP_AUTH_UPSTREAM');
  });
});

describe('gateway settings: advertised authorization servers', () => {
  it('MCP_AUTH_AUTHORIZATION_SERVERS naming a server that is no trusted issuer fails at start-up, naming both settings', () => {
    assert.deepEqual(problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_AUTHORIZATION_SERVERS: 'http://127.0.0.1:9 http://127.0.0.1:8' })), [
      'MCP_AUTH_AUTHORIZATION_SERVERS: "http://127.0.0.1:8" is not a trusted issuer (MCP_AUTH_ISSUER: http://127.0.0.1:9): tokens from it would be refused. Add it to MCP_AUTH_ISSUER, or leave it out',
    ]);
    const config = loadGatewayConfig({ ...base, MCP_AUTH_ISSUER: 'http://127.0.0.1:9 http://127.0.0.1:8', MCP_AUTH_AUTHORIZATION_SERVERS: 'http://127.0.0.1:8' });
    assert.deepEqual(config.guard.authorizationServers, ['http://127.0.0.1:8']);
  });
});
