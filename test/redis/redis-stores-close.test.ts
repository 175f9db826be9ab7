// Closing the Redis stores after a failed connection lets the process exit at once: ioredis arms a timer on
// disconnect (2 s by default) that a socket which already failed never clears. Run in a real child process, since
// what is tested is when it exits.
import assert from 'node:assert/strict';
import { spawn } from '../helpers/child-process.js';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { freePort } from '../helpers/free-port.js';

const STORES = new URL('../../src/redis/redis-stores.ts', import.meta.url).href;

describe('Redis stores: close', () => {
  test('after a refused connection, the process exits within the command timeout of close(), not 2 s later', async () => {
    const port = await freePort(); // nothing listens there
    const script = `
      const { createRedisStores } = await import(${JSON.stringify(STORES)});
      const stores = await createRedisStores({ url: 'redis://127.0.0.1:${port}', connectTimeoutMs: 500, commandTimeoutMs: 200, onWarning: () => {} });
      await stores.close();
      process.stdout.write('closed\\n');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let closedAt = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('closed')) closedAt = Date.now();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    const lingered = Date.now() - closedAt;
    assert.equal(code, 0, stderr);
    assert.ok(closedAt > 0, 'the stores were closed');
    assert.ok(lingered < 1_500, `exited ${lingered} ms after close() (ioredis's default disconnect timer is 2 000 ms)`);
  });
});
