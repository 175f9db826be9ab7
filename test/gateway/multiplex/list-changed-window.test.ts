// The window collapsing a stream's `list_changed` notifications: the first passes, any held back in the window
// are followed by exactly one more when it ends, and nothing is sent once the stream ended.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { ListChangedWindow } from '../../../src/gateway/multiplex/list-changed-window.js';

const TOOLS = 'notifications/tools/list_changed';
const PROMPTS = 'notifications/prompts/list_changed';
const WINDOW_MS = 40;

/** Active timers that keep the process alive. */
function keptAlive(): number {
  return process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
}

describe('ListChangedWindow', () => {
  it('passes the first of a kind and sends nothing more when none was held back', async () => {
    const sent: string[] = [];
    const window = new ListChangedWindow((method) => sent.push(method), WINDOW_MS);
    assert.equal(window.pass(TOOLS), true);
    await sleep(WINDOW_MS * 3);
    assert.deepEqual(sent, []);
    assert.equal(window.pass(TOOLS), true, 'a window ended: the next passes at once');
    window.close();
  });

  it('follows a burst held back in the window with exactly one trailing notification, at the window end', async () => {
    const sent: { method: string; at: number }[] = [];
    const start = Date.now();
    const window = new ListChangedWindow((method) => sent.push({ method, at: Date.now() - start }), WINDOW_MS);
    assert.equal(window.pass(TOOLS), true);
    for (let i = 0; i < 10; i++) assert.equal(window.pass(TOOLS), false);
    assert.equal(sent.length, 0, 'nothing before the window ends');
    await sleep(WINDOW_MS * 4);
    assert.deepEqual(sent.map((s) => s.method), [TOOLS]);
    assert.ok(sent[0]!.at >= WINDOW_MS - 5, `sent at ${sent[0]!.at} ms`);
    window.close();
  });

  it('collapses again after the trailing notification, and keeps kinds apart', async () => {
    const sent: string[] = [];
    const window = new ListChangedWindow((method) => sent.push(method), WINDOW_MS);
    assert.equal(window.pass(TOOLS), true);
    assert.equal(window.pass(PROMPTS), true, 'another kind has its own window');
    assert.equal(window.pass(TOOLS), false);
    await sleep(WINDOW_MS * 1.5);
    assert.deepEqual(sent, [TOOLS]);
    assert.equal(window.pass(TOOLS), false, 'the trailing notification opened a window');
    await sleep(WINDOW_MS * 2);
    assert.deepEqual(sent, [TOOLS, TOOLS]);
    window.close();
  });

  it('sends nothing once closed, and its timers keep no process alive', async () => {
    const sent: string[] = [];
    const before = keptAlive();
    const window = new ListChangedWindow((method) => sent.push(method), WINDOW_MS);
    window.pass(TOOLS);
    window.pass(TOOLS);
    window.pass(PROMPTS);
    window.pass(PROMPTS);
    assert.equal(keptAlive(), before, 'the window timers are unref');
    window.close();
    window.close();
    await sleep(WINDOW_MS * 3);
    assert.deepEqual(sent, []);
    assert.equal(window.pass(TOOLS), false, 'a closed window passes nothing');
  });

  it('lets a kind past its bounds pass unheld rather than hold it without limit', () => {
    const window = new ListChangedWindow(() => {}, WINDOW_MS);
    for (let i = 0; i < 8; i++) assert.equal(window.pass(`notifications/k${i}/list_changed`), true);
    assert.equal(window.pass('notifications/k9/list_changed'), true);
    assert.equal(window.pass('notifications/k9/list_changed'), true, 'no window was opened for it');
    const long = `notifications/${'x'.repeat(200)}/list_changed`;
    assert.equal(window.pass(long), true);
    assert.equal(window.pass(long), true);
    window.close();
  });
});
