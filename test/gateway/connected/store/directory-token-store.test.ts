// The directory store: the shared TokenStore contract, then what is its own: entries survive a new store on the
// same directory (a restart), private modes (directory 0700, files 0600), nothing of a sealed record readable on
// disk, leftover temporary and malformed files ignored and swept, and unsafe directories refused at start-up.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { ConfigurationError } from '../../../../src/core/kernel/errors.js';
import { parseSessionSecret } from '../../../../src/core/session/session-seal.js';
import { connectionKey, type ConnectionRecord } from '../../../../src/gateway/connected/oauth/connection-record.js';
import { createDirectoryTokenStore } from '../../../../src/gateway/connected/store/directory-token-store.js';
import { createRecordSealer } from '../../../../src/gateway/connected/store/record-sealer.js';
import { TokenStoreFullError } from '../../../../src/gateway/connected/store/token-store.js';
import { describeTokenStoreConformance } from './token-store-conformance.js';

const root = mkdtempSync(join(tmpdir(), 'guard-token-store-'));
after(() => rmSync(root, { recursive: true, force: true }));
let directories = 0;
const newDirectory = (): string => join(root, `store-${(directories += 1)}`);

describeTokenStoreConformance('directory store', {
  open: (bounds) => createDirectoryTokenStore({ directory: newDirectory(), ...bounds }),
  boundsEntries: true,
  skip: false,
});

describe('directory store: on disk', { timeout: 20_000 }, () => {
  test('a new store on the same directory (a restart) finds every entry, its TTLs and its bounds', async () => {
    const directory = newDirectory();
    const bounds = { maxEntries: 2, maxEphemeralEntries: 1 };
    const first = await createDirectoryTokenStore({ directory, ...bounds });
    await first.set('conn:alice:notes', 'sealed-alice');
    await first.set('ticket:t1', 'sealed-ticket', 200);
    await first.set('client:as', 'sealed-client');
    await first.close();
    const second = await createDirectoryTokenStore({ directory, ...bounds });
    assert.equal(await second.get('conn:alice:notes'), 'sealed-alice');
    assert.equal(await second.get('ticket:t1'), 'sealed-ticket');
    await assert.rejects(second.set('conn:bob:notes', 'x'), TokenStoreFullError, 'the count of connections survives the restart');
    await assert.rejects(second.set('ticket:t2', 'x', 1000), TokenStoreFullError, 'the count of tickets survives the restart');
    await sleep(250);
    assert.equal(await second.get('ticket:t1'), undefined);
    await second.set('ticket:t2', 'x', 1000);
    await second.delete('client:as');
    await second.set('conn:bob:notes', 'x');
    assert.deepEqual((await second.keys('conn:', 10)).sort(), ['conn:alice:notes', 'conn:bob:notes']);
    await second.close();
  });

  test('ephemeral entries are bounded apart: a flood of tickets and sign-ins leaves the room of connections', async () => {
    const directory = newDirectory();
    const store = await createDirectoryTokenStore({ directory, maxEntries: 2, maxEphemeralEntries: 3 });
    for (const key of ['ticket:a', 'ticketof:a', 'login:a']) await store.set(key, 'v', 60_000);
    await assert.rejects(store.set('flow:a', 'v', 60_000), TokenStoreFullError);
    await store.set('conn:alice:notes', 'v');
    await store.set('client:as', 'v');
    await assert.rejects(store.set('conn:bob:notes', 'v'), TokenStoreFullError, 'connections have their own bound');
    await store.set('ticket:a', 'v2', 60_000);
    assert.equal(await store.get('ticket:a'), 'v2', 'an ephemeral entry replaced takes no more room');
    await store.close();
  });

  test('the directory is created 0700 and every entry written 0600, with no plain text of a sealed record', async () => {
    const directory = join(newDirectory(), 'nested');
    const store = await createDirectoryTokenStore({ directory });
    const sealer = createRecordSealer(parseSessionSecret(randomBytes(32).toString('base64url'), 'MCP_AUTH_TOKEN_STORE_SECRET'));
    const user = { issuer: 'https://id.example.com', subject: 'alice@example.com' };
    const key = connectionKey(user, 'notes');
    const record: ConnectionRecord = {
      accessToken: 'upstream-access-token-7Qx2',
      refreshToken: 'upstream-refresh-token-9Zk4',
      tokenType: 'Bearer',
      asIssuer: 'https://as.upstream.example.com',
      clientId: 'gateway-client',
      createdAt: Date.now(),
      updatedAt: Date.now(),
    };
    await store.set(key, await sealer.seal(key, record));
    assert.equal(statSync(directory).mode & 0o777, 0o700);
    const files = readdirSync(directory);
    assert.equal(files.length, 1);
    assert.equal(statSync(join(directory, files[0]!)).mode & 0o777, 0o600);
    const onDisk = files.map((f) => readFileSync(join(directory, f), 'utf8') + f).join('\n');
    for (const secret of ['upstream-access-token-7Qx2', 'upstream-refresh-token-9Zk4', 'alice@example.com', 'gateway-client']) {
      assert.ok(!onDisk.includes(secret), `${secret} is on disk in plain text`);
      assert.ok(!onDisk.includes(Buffer.from(secret).toString('base64url')), `${secret} is on disk in base64url`);
    }
    assert.deepEqual(await sealer.open(key, (await store.get(key))!), record);
    await store.close();
  });

  test('leftover temporary files and malformed entries are ignored, then swept with expired entries', async () => {
    const directory = newDirectory();
    mkdirSync(directory, { mode: 0o700 });
    const temporary = join(directory, '.tmp-left-by-a-crash');
    writeFileSync(temporary, '0\nhalf-written', { mode: 0o600 });
    utimesSync(temporary, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    writeFileSync(join(directory, Buffer.from('conn:torn').toString('base64url')), 'no header line', { mode: 0o600 });
    writeFileSync(join(directory, 'README'), 'not an entry', { mode: 0o600 });
    const store = await createDirectoryTokenStore({ directory, sweepIntervalMs: 1_000 });
    assert.equal(await store.get('conn:torn'), undefined);
    assert.deepEqual(await store.keys('', 10), []);
    await store.set('ticket:soon-expired', 'v', 50);
    await store.set('conn:kept', 'v');
    await sleep(1_300);
    const left = readdirSync(directory).sort();
    assert.ok(!left.includes('.tmp-left-by-a-crash'), 'the stale temporary file is swept');
    assert.ok(!left.includes(Buffer.from('ticket:soon-expired').toString('base64url')), 'the expired entry is swept');
    assert.ok(left.includes(Buffer.from('conn:kept').toString('base64url')));
    assert.deepEqual(await store.keys('', 10), ['conn:kept']);
    await store.close();
  });

  test('an expired entry is removed when read; an impossible key is absent to readers and refused to writers', async () => {
    const directory = newDirectory();
    const store = await createDirectoryTokenStore({ directory });
    await store.set('flow:s', 'v', 30);
    await sleep(60);
    assert.equal(await store.get('flow:s'), undefined);
    assert.deepEqual(readdirSync(directory), []);
    const long = `conn:${'x'.repeat(300)}`;
    assert.equal(await store.get(long), undefined);
    assert.equal(await store.take(long), undefined);
    assert.equal(await store.delete(long), false);
    await assert.rejects(store.set(long, 'v'), RangeError);
    await assert.rejects(store.set('', 'v'), RangeError);
    await assert.rejects(store.set('k', 'v', 0), RangeError);
    await store.close();
  });

  test('start-up refuses a world-writable directory and a path that is not a directory, naming the setting (MCP_AUTH_TOKEN_STORE as the gateway passes it)', async () => {
    const open = join(newDirectory());
    mkdirSync(open);
    chmodSync(open, 0o777);
    await assert.rejects(createDirectoryTokenStore({ directory: open, setting: 'MCP_AUTH_TOKEN_STORE' }), (error: unknown) => {
      assert.ok(error instanceof ConfigurationError);
      assert.match(error.message, /^MCP_AUTH_TOKEN_STORE: .*writable by every user/);
      return true;
    });
    const file = join(root, `a-file-${directories}`);
    writeFileSync(file, '');
    await assert.rejects(createDirectoryTokenStore({ directory: file, setting: 'MCP_AUTH_TOKEN_STORE' }), /^ConfigurationError: MCP_AUTH_TOKEN_STORE: .*(not a directory|cannot be created)/);
    await assert.rejects(createDirectoryTokenStore({ directory: join(file, 'below'), setting: 'MCP_AUTH_TOKEN_STORE' }), /MCP_AUTH_TOKEN_STORE: .*cannot be created/);
    await assert.rejects(createDirectoryTokenStore({ directory: '' }), /options\.directory: must name a directory/);
  });

  test('start-up refuses a directory this process cannot write to', { skip: !existsSync('/proc/self') && 'needs /proc, which not even root may write to' }, async () => {
    // The tests may run as root, who may write to any directory of an ordinary file system: /proc stands for one
    // this process cannot write to.
    await assert.rejects(createDirectoryTokenStore({ directory: '/proc', setting: 'MCP_AUTH_TOKEN_STORE' }), /^ConfigurationError: MCP_AUTH_TOKEN_STORE: the token store directory \/proc is not writable by this process/);
  });

  test('start-up refuses, at once, a directory that cannot be created under an existing parent', { skip: !existsSync('/proc/self') && 'needs /proc', timeout: 5_000 }, async () => {
    // Node's recursive mkdir never returns for such a path (ENOENT under an existing parent): the start-up would hang.
    await assert.rejects(createDirectoryTokenStore({ directory: '/proc/mcp-oauth-guard/tokens', setting: 'MCP_AUTH_TOKEN_STORE' }), /^ConfigurationError: MCP_AUTH_TOKEN_STORE: the token store directory \/proc\/mcp-oauth-guard\/tokens cannot be created \(ENOENT\)/);
  });
});

describe('directory store: two processes on one directory', { timeout: 30_000 }, () => {
  // Two stores on one directory stand for the gateway and a `connections revoke` beside it: each has its own
  // in-process mutex, so only the entries' lock files keep one's read-then-write from straddling the other's.
  test('a delete racing a compare-and-set never leaves the compared value written back', async () => {
    const directory = newDirectory();
    const [gateway, command] = [await createDirectoryTokenStore({ directory }), await createDirectoryTokenStore({ directory })];
    let writtenBack = 0;
    for (let round = 0; round < 40; round++) {
      const key = `conn:user-${round}:notes`;
      await gateway.set(key, 'before-refresh');
      await Promise.all([gateway.compareAndSet(key, 'before-refresh', 'after-refresh'), command.delete(key)]);
      // Either order is fine, as long as the delete is not undone: the entry is gone either way.
      if ((await gateway.get(key)) !== undefined) writtenBack++;
    }
    assert.equal(writtenBack, 0, 'a refresh wrote back a connection the command had deleted');
    assert.deepEqual(readdirSync(directory).filter((name) => name.startsWith('.lock-')), [], 'no lock file is left');
    await Promise.all([gateway.close(), command.close()]);
  });
});

describe('directory store: close', { timeout: 20_000 }, () => {
  test('waits for the writes under way and refuses later ones, so nothing is written after it', async () => {
    const directory = newDirectory();
    const store = await createDirectoryTokenStore({ directory });
    const writes = Array.from({ length: 20 }, (_, i) => store.set(`conn:user-${i}:notes`, `sealed-${i}`));
    await store.close();
    const settled = await Promise.allSettled(writes);
    const names = readdirSync(directory);
    assert.deepEqual(names.filter((name) => name.startsWith('.')), [], 'no lock or temporary file is left');
    assert.equal(names.length, settled.filter((outcome) => outcome.status === 'fulfilled').length, 'every write that succeeded is on disk, and no other');
    await assert.rejects(store.set('conn:late:notes', 'sealed-late'), /closed/);
    assert.equal(readdirSync(directory).length, names.length);
  });
});
