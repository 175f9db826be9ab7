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

    // The kept profile was learnt at 2025-11-25: a client of another revision is not answered with it as current.
    const older = await connectedSessionClient(() => parts, () => gateway!, '2025-06-18').initialize('bob');
    assert.equal(older.result.protocolVersion, '2025-06-18');
    assert.deepEqual(Object.keys(older.result.capabilities as object).sort(), ['prompts', 'resources', 'tools'], 'the general capabilities');
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

  it('once known, is read again in the background at most every 30 seconds, and takes what another replica wrote', async () => {
    let clock = 0;
    let gets = 0;
    const counted = Object.assign(Object.create(store) as TokenStore, { get: (key: string) => (gets++, store.get(key)) });
    const kept = keptUpstreamProfile({ store: counted, sealer, server: 'upgraded', now: () => clock });
    await kept.learnt({ capabilities: { tools: {} }, protocolVersion: VERSION });
    const other = keptUpstreamProfile({ store, sealer, server: 'upgraded' });
    await other.learnt({ capabilities: { tools: {}, prompts: {} }, protocolVersion: VERSION });
    gets = 0;
    assert.deepEqual(await kept.read(), { capabilities: { tools: {} }, protocolVersion: VERSION }, 'answered at once, without waiting for the store');
    const upgraded = { capabilities: { tools: {}, prompts: {} }, protocolVersion: VERSION };
    await waitFor(async () => JSON.stringify(await kept.read()) === JSON.stringify(upgraded));
    clock += 29_000;
    for (let i = 0; i < 5; i++) assert.deepEqual(await kept.read(), upgraded);
    assert.equal(gets, 1, 'one read of the store in 30 s, however many reads');
    await other.learnt({ capabilities: { logging: {} }, protocolVersion: VERSION });
    clock += 1_000;
    await kept.read();
    await waitFor(async () => (await kept.read())?.capabilities.logging !== undefined);
    assert.equal(gets, 2, 'read again after 30 s');
  });

  it('a refused write is tried again on a later learn or read, at most every 30 seconds', async () => {
    let clock = 0;
    let refuse = true;
    let attempts = 0;
    const flaky = Object.assign(Object.create(store) as TokenStore, {
      set: (key: string, value: string, ttl?: number) => (attempts++, refuse ? Promise.reject(new Error('full')) : store.set(key, value, ttl)),
    });
    const profile = { capabilities: { resources: {} }, protocolVersion: VERSION };
    const kept = keptUpstreamProfile({ store: flaky, sealer, server: 'refused', now: () => clock });
    await kept.learnt(profile);
    assert.equal(attempts, 1);
    await kept.learnt(profile);
    assert.deepEqual(await kept.read(), profile, 'it still serves this process');
    assert.equal(attempts, 1, 'not tried again at once');
    clock += 30_000;
    await kept.learnt(profile);
    assert.equal(attempts, 2, 'tried again on the next learn after 30 s');
    refuse = false;
    clock += 30_000;
    await kept.read();
    await waitFor(async () => (await keptUpstreamProfile({ store, sealer, server: 'refused' }).read()) !== undefined);
    assert.equal(attempts, 3, 'tried again on a read after 30 s, and written');
    clock += 30_000;
    await kept.learnt(profile);
    await kept.read();
    assert.equal(attempts, 3, 'nothing more once written');
  });

  it('settled() waits for a write in progress and for one learnt meanwhile, as the gateway does before its store closes', async () => {
    const releases: Array<() => void> = [];
    const slow = Object.assign(Object.create(store) as TokenStore, {
      set: (key: string, value: string, ttl?: number) => new Promise<void>((resolve) => releases.push(resolve)).then(() => store.set(key, value, ttl)),
    });
    const kept = keptUpstreamProfile({ store: slow, sealer, server: 'slow' });
    const first = { capabilities: { tools: {} }, protocolVersion: VERSION };
    const second = { capabilities: { tools: {}, logging: {} }, protocolVersion: VERSION };
    void kept.learnt(first);
    void kept.learnt(second);
    let settled = false;
    const settling = kept.settled().then(() => (settled = true));
    await waitFor(async () => releases.length === 1);
    assert.equal(settled, false, 'the first write is in progress');
    releases.shift()!();
    await waitFor(async () => releases.length === 1);
    assert.equal(settled, false, 'the second, learnt meanwhile, is in progress');
    releases.shift()!();
    await settling;
    assert.deepEqual(await keptUpstreamProfile({ store, sealer, server: 'slow' }).read(), second, 'the last learnt is in the store');
    await kept.settled();
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

/** Resolves once `check` holds, checking every 10 ms for at most 2 s (then fails). */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 2_000; !(await check()); ) {
    assert.ok(Date.now() < deadline, 'not within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
