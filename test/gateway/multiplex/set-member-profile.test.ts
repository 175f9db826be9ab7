// What a server set keeps of a server's profile: a server in connected mode answered one user with that user's
// token, so its instructions never reach the answers every user gets; a server with the gateway's own credentials
// answers alike for everyone, and its instructions are shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeptProfiles } from '../../../src/gateway/upstream-auth/kept-profile.js';
import { learnProfile, type SetMember } from '../../../src/gateway/multiplex/set-member.js';

const profile = { capabilities: { tools: {} }, instructions: "Alice's notes: 12 of them, the last about her payroll.", protocolVersion: '2025-11-25' };

function member(kept?: KeptProfiles): SetMember {
  return { name: 'notes', profile: undefined, ...(kept ? { kept } : {}) } as unknown as SetMember;
}

test('a server in connected mode: its instructions are neither shown to others nor kept', async () => {
  const written: unknown[] = [];
  const kept: KeptProfiles = { read: async () => undefined, learnt: async (learnt: unknown) => void written.push(learnt) } as unknown as KeptProfiles;
  const connected = member(kept);
  learnProfile(connected, profile);
  assert.deepEqual(connected.profile, { capabilities: { tools: {} }, protocolVersion: '2025-11-25' });
  assert.equal(JSON.stringify(written).includes('payroll'), false);
});

test('a server with the gateway\'s own credentials: its instructions are shown', () => {
  const plain = member();
  learnProfile(plain, profile);
  assert.equal(plain.profile?.instructions, profile.instructions);
});
