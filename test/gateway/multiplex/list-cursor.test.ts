import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { CURSOR_MAX_AGE_MS, ListCursors, MAX_CURSOR_LENGTH } from '../../../src/gateway/multiplex/list-cursor.js';

const caller = (sub: string): AuthInfo => ({ token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://as.example', sub, claims: {}, tokenType: 'Bearer' } }) as unknown as AuthInfo;
const alice = caller('alice');

describe('list cursors of a merged list', () => {
  it('opens what it made, for the same method and caller', () => {
    const cursors = new ListCursors({ configuration: 'a,b' });
    const cursor = cursors.make('tools/list', alice, [['a', 'page-2'], ['b', 'x']]);
    assert.deepEqual(cursors.open(cursor, 'tools/list', alice), { servers: [['a', 'page-2'], ['b', 'x']] });
  });

  it('refuses a cursor tampered with, forged, or made for another method, caller or configuration', () => {
    const cursors = new ListCursors({ configuration: 'a,b' });
    const cursor = cursors.make('tools/list', alice, [['a', 'page-2']]);
    const [v, payload, tag] = cursor.split('.');
    const swapped = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), s: [['b', 'page-2']] })).toString('base64url');
    assert.deepEqual(cursors.open(`${v}.${swapped}.${tag}`, 'tools/list', alice), { refused: 'forged' });
    assert.deepEqual(cursors.open('v1.eyJ9.AAAA', 'tools/list', alice), { refused: 'forged' });
    assert.deepEqual(cursors.open('not a cursor', 'tools/list', alice), { refused: 'malformed' });
    assert.deepEqual(cursors.open(42, 'tools/list', alice), { refused: 'malformed' });
    assert.deepEqual(cursors.open(cursor, 'prompts/list', alice), { refused: 'other_method' });
    assert.deepEqual(cursors.open(cursor, 'tools/list', caller('bob')), { refused: 'other_caller' });
    assert.deepEqual(new ListCursors({ configuration: 'a,b,c', secrets: [] }).open(cursor, 'tools/list', alice), { refused: 'forged' });
    assert.deepEqual(cursors.open('x'.repeat(MAX_CURSOR_LENGTH + 1), 'tools/list', alice), { refused: 'too_long' });
  });

  it('shares cursors between replicas given the same secret, and refuses another configuration or an old cursor', () => {
    const secret = new Uint8Array(32).fill(7);
    let now = 1_000_000_000_000;
    const one = new ListCursors({ secrets: [secret], configuration: 'a,b', now: () => now });
    const two = new ListCursors({ secrets: [new Uint8Array(32).fill(9), secret], configuration: 'a,b', now: () => now });
    const cursor = one.make('resources/list', alice, [['b', '3']]);
    assert.deepEqual(two.open(cursor, 'resources/list', alice), { servers: [['b', '3']] });
    assert.deepEqual(new ListCursors({ secrets: [secret], configuration: 'a', now: () => now }).open(cursor, 'resources/list', alice), { refused: 'other_configuration' });
    now += CURSOR_MAX_AGE_MS + 1_000;
    assert.deepEqual(two.open(cursor, 'resources/list', alice), { refused: 'expired' });
  });
});
