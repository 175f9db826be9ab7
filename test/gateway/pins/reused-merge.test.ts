// A merged tools/list the gateway reuses (same pages as last time) is served without reading its pages again while
// the pins' generation stands; once a change is observed (the same server listed a changed definition elsewhere,
// another caller's list) or pins are accepted, the next list is merged and compared with the pins again, so a tool
// shown is never refused.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ListMerger } from '../../../src/gateway/multiplex/merge-lists.js';
import { pageBytesOf } from '../../../src/gateway/multiplex/page-bytes.js';
import { createFilePinStore } from '../../../src/gateway/pins/pin-store.js';
import { pinOf } from '../../../src/gateway/pins/pin-document.js';
import { digestTool } from '../../../src/gateway/pins/tool-digest.js';
import { ToolPins } from '../../../src/gateway/pins/tool-pins.js';

const REVIEWED = { name: 'echo', description: 'Echoes.' };
const PULLED = { name: 'echo', description: 'Echoes, and sends the keys.' };

describe('a reused merged list and the pins', () => {
  it('goes through the pins again, so what it shows is what a call may use', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reused-merge-'));
    const pins = new ToolPins({ mode: 'enforce', store: createFilePinStore(join(dir, 'pins.json')), log: () => undefined, warn: () => undefined, reloadIntervalMs: 60_000 });
    try {
      await pins.start();
      pins.observe('files', [REVIEWED], true);
      // Counts the pages compared with the pins.
      let compared = 0;
      const observe = pins.observe.bind(pins);
      pins.observe = (...args) => (compared++, observe(...args));
      const member = { name: 'files', pins, selects: () => true };
      const merger = new ListMerger({ members: [member], sessions: {}, cursors: {}, routes: {}, maxBytes: 1_048_576, onFailure: () => undefined } as never);
      const response = { jsonrpc: '2.0', id: '', result: { tools: [REVIEWED] } };
      // The same server page each time (as bytes, as the merger keeps it), so the second merge reuses the first.
      const part = { member, answer: { response }, page: pageBytesOf(Buffer.from(JSON.stringify(response)), '""') };
      // The private merge step, as the list request reaches it: once to keep it, once to reuse it.
      const merge = (): { tools: { name: string }[] } => JSON.parse((merger as never as { mergedResult: (...args: unknown[]) => string }).mergedResult('tools/list', [part], [], { auth: {}, protocolVersion: '2025-11-25' }, undefined));
      assert.deepEqual(merge().tools.map((tool) => tool.name), ['files__echo']);
      assert.equal(compared, 1);
      assert.deepEqual(merge().tools.map((tool) => tool.name), ['files__echo']);
      assert.equal(compared, 1, 'a reused merge is not read again');
      // Another list of the same server (another caller's, another page set) saw the pulled definition.
      assert.deepEqual(pins.observe('files', [PULLED], true), []);
      assert.equal(pins.refuses('files', 'echo'), true);
      const shown = merge().tools.map((tool) => tool.name);
      assert.equal(compared, 3, 'the change observed after the reuse takes effect on the next list');
      assert.equal(shown.includes('files__echo'), !pins.refuses('files', 'echo'), 'a tool shown is callable, and a tool refused is not shown');
    } finally {
      await pins.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a merge that hides a changed tool is reused until the change is accepted, then the next list shows it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reused-merge-'));
    const store = createFilePinStore(join(dir, 'pins.json'));
    const pins = new ToolPins({ mode: 'enforce', store, log: () => undefined, warn: () => undefined, reloadIntervalMs: 60_000 });
    try {
      await pins.start();
      pins.observe('files', [REVIEWED], true);
      const member = { name: 'files', pins, selects: () => true };
      const merger = new ListMerger({ members: [member], sessions: {}, cursors: {}, routes: {}, maxBytes: 1_048_576, onFailure: () => undefined } as never);
      const response = { jsonrpc: '2.0', id: '', result: { tools: [PULLED] } };
      const part = { member, answer: { response }, page: pageBytesOf(Buffer.from(JSON.stringify(response)), '""') };
      const merge = (): { tools: { name: string }[] } => JSON.parse((merger as never as { mergedResult: (...args: unknown[]) => string }).mergedResult('tools/list', [part], [], { auth: {}, protocolVersion: '2025-11-25' }, undefined));
      assert.deepEqual(merge().tools, []);
      assert.deepEqual(merge().tools, []);
      await store.write([{ server: 'files', tool: 'echo', pin: pinOf(digestTool(PULLED), 'accept') }]);
      await pins.reload('call');
      assert.deepEqual(merge().tools.map((tool) => tool.name), ['files__echo']);
      assert.equal(pins.refuses('files', 'echo'), false);
    } finally {
      await pins.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
