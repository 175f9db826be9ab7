// examples/stdio-gateway/: the raw Python server behind the gateway, started with the flags its README shows and
// its policy.json, against the test authorization server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig, parseGatewayArgs } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { findOnPath, RawSession, ROOT } from '../helpers/stdio-gateway.js';

const SCOPES = ['notes:read', 'notes:write'];
const skip = findOnPath('python3') ? false : 'python3 is not installed (.ci/run installs it)';

describe('examples/stdio-gateway', { skip, timeout: 60_000 }, () => {
  let as: AuthorizationServer;
  let gateway: RunningGateway;

  before(async () => {
    as = await startAuthorizationServer({ extraScopes: SCOPES });
    // The README's flags, with this test's issuer and a free port; paths are relative to the repository.
    process.chdir(ROOT);
    const args = parseGatewayArgs(
      ['--upstream-command', 'python3 examples/stdio-gateway/server.py', '--issuer', as.issuer, '--policy', 'examples/stdio-gateway/policy.json', '--identity-env', 'on', '--port', '0'],
      { PATH: process.env.PATH ?? '' },
    );
    assert.equal(args.help, false);
    gateway = await startGateway(loadGatewayConfig(args.help ? {} : args.settings), { log: () => {}, warn: () => {} });
    as.addResource(gateway.resource, { scopes: SCOPES });
  });

  after(async () => {
    await gateway?.shutdown();
    await as?.close();
  });

  const open = async (sub: string, scope: string): Promise<RawSession> => {
    const s = new RawSession(gateway.resource, await as.issueAccessToken({ resource: gateway.resource, scope, sub }));
    const init = await s.initialize();
    assert.equal(init.status, 200, init.text);
    assert.equal(init.json.result.serverInfo.name, 'stdio-gateway-example');
    return s;
  };

  test('notes:read: tools filtered by policy.json, the caller\'s identity in the process, 403 to remember', async () => {
    const reader = await open('alice', 'notes:read');
    const list = await reader.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.deepEqual(list.json.result.tools.map((t: { name: string }) => t.name), ['whoami', 'add', 'recall']);
    assert.match(await reader.text('whoami'), /^subject alice, client \S+, issuer \S+$/);
    assert.equal(await reader.text('add', { a: 2, b: 40 }), '42');
    assert.equal((await reader.call('remember', { text: 'x' })).status, 403);
    await reader.delete();
  });

  test('notes:write: each session keeps its own notes in its own process', async () => {
    const bob = await open('bob', 'notes:write');
    const carol = await open('carol', 'notes:write');
    assert.equal(await bob.text('remember', { text: 'milk' }), '1 note(s)');
    assert.equal(await bob.text('recall'), 'milk');
    assert.equal(await carol.text('recall'), 'no notes yet');
    await bob.delete();
    await carol.delete();
  });
});
