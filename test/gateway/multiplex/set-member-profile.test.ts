// What a server set keeps of a server's profile: a server in connected mode answered one user with that user's
// token, so its instructions never reach the answers every user gets; a server with the gateway's own credentials
// answers alike for everyone, and its instructions are shown.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeptProfiles } from '../../../src/gateway/upstream-auth/kept-profile.js';
import { initializeResult } from '../../../src/gateway/multiplex/merge-initialize.js';
import { learnProfile, recallProfiles, type SetMember } from '../../../src/gateway/multiplex/set-member.js';

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

test('a server known only by its kept profile takes a newer one, and adds it only at the revision it was learnt at', async () => {
  let stored: object = { capabilities: { tools: {} }, protocolVersion: '2025-11-25' };
  const kept = { read: async () => stored, learnt: async () => undefined } as unknown as KeptProfiles;
  const recalled = member(kept);
  await recallProfiles([recalled]);
  assert.deepEqual(recalled.profile, stored);
  stored = { capabilities: { tools: {}, logging: {} }, protocolVersion: '2025-11-25' };
  await recallProfiles([recalled]);
  assert.deepEqual(recalled.profile, stored, 'the profile another replica kept since replaces the recalled one');
  const info = { name: 'gateway', version: '1' };
  assert.deepEqual((initializeResult('2025-11-25', [recalled], info).capabilities as Record<string, unknown>).logging, {});
  assert.equal((initializeResult('2025-06-18', [recalled], info).capabilities as Record<string, unknown>).logging, undefined, 'learnt at another revision');
  // Learnt from its own session, it is no longer replaced from the store.
  learnProfile(recalled, { capabilities: { prompts: {} }, protocolVersion: '2025-06-18' });
  await recallProfiles([recalled]);
  assert.deepEqual(recalled.profile, { capabilities: { prompts: {} }, protocolVersion: '2025-06-18' });
});
