// The pins commands need only the settings they use, and name every bad one at once, as the gateway's start-up
// does: they never verify a token, so no issuer is needed; the usage, the settings and the pin file's directory are
// reported in one message. The real CLI against a real upstream.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runPinsCommand } from '../../../src/gateway/cli/pins/pins-command.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { runGatewayCli } from '../../helpers/run-cli.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';

let dir: string;
let upstream: PlainMcpServer;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pins-settings-'));
  upstream = await startPlainMcpServer({ tools: () => [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } }] });
});
after(async () => {
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('pins commands and their settings', () => {
  it('pins update with no issuer set lists the upstream and writes the pins', async () => {
    const file = join(dir, 'no-issuer.json');
    const run = await runGatewayCli(['pins', 'update'], { HOST: '127.0.0.1', MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_PIN_FILE: file });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /upstream: 1 tool pinned \(0 changed, 1 new, 0 removed\)/);
    assert.match(JSON.parse(readFileSync(file, 'utf8')).servers.upstream.echo.digest, /^sha256:[0-9a-f]{64}$/);
  });

  it('names every bad setting in one message: a bad port and a pin file in a directory that does not exist', async () => {
    const err: string[] = [];
    const output = { stdout: () => undefined, stderr: (text: string) => void err.push(text) };
    const env = { HOST: '127.0.0.1', PORT: 'eighty', MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_PIN_FILE: join(dir, 'missing', 'pins.json') };
    assert.equal(await runPinsCommand(['update'], env, output), 2);
    const message = err.join('');
    assert.match(message, /PORT/);
    assert.match(message, /MCP_AUTH_PIN_FILE.*directory that does not exist/);
    assert.doesNotMatch(message, /MCP_AUTH_ISSUER/, 'no issuer is needed');
    assert.equal(upstream.calls(), 0);
  });

  it('with pins off the gateway\'s settings leave the pin file unchecked; with them on, a missing directory is refused', () => {
    const settings = { MCP_AUTH_ISSUER: 'https://issuer.example', HOST: '127.0.0.1', MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_PIN_FILE: join(dir, 'missing', 'pins.json') };
    assert.equal(loadGatewayConfig({ ...settings, MCP_AUTH_PINS: 'off' }).pins?.mode, 'off');
    assert.equal(loadGatewayConfig(settings).pins?.mode, 'off');
    assert.throws(() => loadGatewayConfig({ ...settings, MCP_AUTH_PINS: 'warn' }), /MCP_AUTH_PIN_FILE.*directory that does not exist/);
    // Nor is redis without a Redis URL while pins are off.
    assert.equal(loadGatewayConfig({ ...settings, MCP_AUTH_PINS: 'off', MCP_AUTH_PIN_FILE: 'redis' }).pins?.redis, true);
  });

  it('names a bad action with the bad settings', async () => {
    const err: string[] = [];
    const output = { stdout: () => undefined, stderr: (text: string) => void err.push(text) };
    assert.equal(await runPinsCommand(['upgrade'], { HOST: '127.0.0.1', MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_PIN_FILE: join(dir, 'missing', 'pins.json') }, output), 2);
    assert.match(err.join(''), /action.*"upgrade"[\s\S]*MCP_AUTH_PIN_FILE.*directory that does not exist/);
  });
});
