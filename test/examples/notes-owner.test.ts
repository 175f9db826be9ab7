// The notes example keys notes by issuer and subject: with several trusted issuers, each names its users on its
// own, and two `alice`s from two issuers are two people.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import { createNotesHandler, NotesStore } from '../../examples/notes-server.js';

const alice = (iss: string): AuthInfo => ({ token: `t-${iss}`, clientId: 'c', scopes: ['notes:read', 'notes:write'], extra: { sub: 'alice', iss, claims: {}, tokenType: 'jwt' } });
const call = (name: string, args: Record<string, unknown> = {}) => ({ jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name, arguments: args } });

test("one issuer's alice does not see another issuer's alice's notes", async () => {
  const handler = createNotesHandler(new NotesStore());
  const first = alice('https://login.one.example');
  const second = alice('https://login.two.example');
  await handler(call('notes_add', { text: 'secret of the first alice' }), { auth: first } as never);
  const listed = JSON.stringify(await handler(call('notes_list'), { auth: second } as never));
  assert.ok(!listed.includes('secret of the first alice'), listed);
  const own = JSON.stringify(await handler(call('notes_list'), { auth: first } as never));
  assert.ok(own.includes('secret of the first alice'), own);
});
