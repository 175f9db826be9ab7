// Connected accounts keep the upstream's profile (capabilities and revision) in the token store: gateway A learns it
// when alice connects and her session is opened at the upstream; gateway B, started afterwards on the same directory
// store, answers bob's pre-connect initialize with the upstream's capabilities from its first request, without
// contacting the upstream. Then the store's record itself: sealed, read once, written only on change, and ignored when
// it does not open, has another shape or is too large.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { keptUpstreamProfile, MAX_KEPT_PROFILE_BYTES, upstreamProfileKey } from '../../../src/gateway/connected/kept-upstream-profile.js';
import { createTokenStore } from '../../../src/gateway/connected/store/create-token-store.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import type { TokenStore } from '../../../src/gateway/connected/store/token-store.js';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, startConnectedGateway, type ConnectedAccountsParts, connectedSessionClient, startToolsOnlyConnectedParts } from '../../helpers/connected-accounts.js';
import { TOOLS_ONLY_PROFILE, type ToolsOnlyUpstream } from '../../helpers/tools-only-upstream.js';
import { PageBrowser } from './pages/page-browser.js';

const VERSION = TOOLS_ONLY_PROFILE.protocolVersion;

describe('connected accounts: the learnt upstream profile survives a restart', { timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let upstream: ToolsOnlyUpstream;
  let gateway: RunningGateway | undefined;
  let settings: Record<string, string>;
  let started: Awaited<ReturnType<typeof startToolsOnlyConnectedParts>> | undefined;

  before(async () => {
    started = await startToolsOnlyConnectedParts();
    ({ parts, upstream, settings } = started);
  });

  after(() => started?.close(gateway));

  const client = connectedSessionClient(() => parts, () => gateway!, VERSION);
  const initialize = client.initialize;
  const call = client.request;

  it('gateway A learns it from the session opened for alice; gateway B answers bob with it at once', async () => {
    gateway = await startConnectedGateway(parts, settings);
    const fallback = await initialize('bob');
    assert.deepEqual(Object.keys(fallback.result.capabilities as object).sort(), ['prompts', 'resources', 'tools'], 'nothing kept yet');

    const alice = await initialize('alice');
    const first = await call(alice.token, alice.sessionId, 'tools/call', { name: 'echo', arguments: {} });
    const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.json.result.content))![1]!;
    const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
    assert.equal(done.status, 200, done.body);
    assert.equal((await call(alice.token, alice.sessionId, 'tools/list')).status, 200);
    assert.equal(upstream.initialized(), 1);
    // Sealed at rest: no capability name in plain text in any file of the store.
    const files = readdirSync(parts.storeDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    for (const file of files) assert.doesNotMatch(readFileSync(join(file.parentPath, file.name), 'utf8'), /listChanged/);
    await gateway.shutdown();

    gateway = await startConnectedGateway(parts, settings);
    const bob = await initialize('bob');
    assert.deepEqual(bob.result.capabilities, TOOLS_ONLY_PROFILE.capabilities);
    assert.equal(bob.result.instructions, undefined, "never the instructions alice's session got");
    assert.equal(upstream.initialized(), 1, "gateway B answered bob's initialize without contacting the upstream");
  });
});

describe('the kept profile record', { timeout: 10_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kept-profile-'));
  const sealer = createRecordSealer([{ kid: 'a', key: new Uint8Array(32).fill(7) }]);
  const otherSealer = createRecordSealer([{ kid: 'b', key: new Uint8Array(32).fill(9) }]);
  let store: TokenStore;
  let writes = 0;

  before(async () => {
    const inner = await createTokenStore({ kind: 'directory', directory: dir, setting: 'MCP_AUTH_TOKEN_STORE' });
    // The directory store itself, its writes counted.
    store = Object.assign(Object.create(inner) as TokenStore, { set: (key: string, value: string, ttl?: number) => (writes++, inner.set(key, value, ttl)) });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is written once per different profile, and read back by another instance with only capabilities and revision', async () => {
    const kept = keptUpstreamProfile({ store, sealer, server: 'notes' });
    assert.equal(await kept.read(), undefined);
    const profile = { capabilities: { tools: {}, experimental: { account: 'alice-42' } }, protocolVersion: VERSION, instructions: 'about alice' } as never;
    await kept.learnt(profile);
    await kept.learnt(profile);
    assert.equal(writes, 1, 'the same profile is not written again');
    assert.deepEqual(await keptUpstreamProfile({ store, sealer, server: 'notes' }).read(), { capabilities: { tools: {} }, protocolVersion: VERSION });
    assert.equal(await keptUpstreamProfile({ store, sealer, server: 'files' }).read(), undefined, 'another server has none');
    await kept.learnt({ capabilities: { tools: {}, logging: {} } });
    assert.equal(writes, 2);
  });

  it('is ignored when it does not open, has another shape, or is too large', async () => {
    const key = upstreamProfileKey('odd');
    const read = () => keptUpstreamProfile({ store, sealer, server: 'odd' }).read();
    await store.set(key, await otherSealer.seal(key, { capabilities: { tools: {} } }));
    assert.equal(await read(), undefined, 'sealed with another key');
    await store.set(key, await sealer.seal(upstreamProfileKey('notes'), { capabilities: { tools: {} } }));
    assert.equal(await read(), undefined, "another server's record copied under this key");
    for (const value of [{ capabilities: [] }, { capabilities: { tools: {} }, protocolVersion: 7 }, { protocolVersion: VERSION }]) {
      await store.set(key, await sealer.seal(key, value));
      assert.equal(await read(), undefined, JSON.stringify(value));
    }
    const large = { capabilities: { tools: { x: 'y'.repeat(MAX_KEPT_PROFILE_BYTES) } } };
    const writesBefore = writes;
    await keptUpstreamProfile({ store, sealer, server: 'odd' }).learnt(large);
    assert.equal(writes, writesBefore, 'a profile over the kept bound is not written');
    // The largest profile kept fits the store's bound on a value, sealed: it is written and read back.
    const largest = { capabilities: { tools: { x: 'y'.repeat(MAX_KEPT_PROFILE_BYTES - 40) } } };
    await keptUpstreamProfile({ store, sealer, server: 'full' }).learnt(largest);
    assert.deepEqual(await keptUpstreamProfile({ store, sealer, server: 'full' }).read(), largest);
  });

  it('is read again, at most every 30 seconds, while none is known', async () => {
    let clock = 0;
    const kept = keptUpstreamProfile({ store, sealer, server: 'late', now: () => clock });
    assert.equal(await kept.read(), undefined);
    await keptUpstreamProfile({ store, sealer, server: 'late' }).learnt({ capabilities: { prompts: {} } });
    assert.equal(await kept.read(), undefined, 'not read again within 30 s');
    clock += 30_000;
    assert.deepEqual(await kept.read(), { capabilities: { prompts: {} } });
  });
});
