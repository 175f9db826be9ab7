import { negotiatedSessionVersion } from '../../core/mcp/protocol-version.js';
import { profileAtRevision } from '../upstream-auth/kept-profile.js';
import type { SetMember } from './set-member.js';


/** The gateway's own `serverInfo` in merged answers. */
export interface GatewayInfo {
  readonly name: string;
  readonly version: string;
}

/** Capabilities a server may offer that the endpoint does not: tasks (their ids name no server, so the gateway could not route them). */
const NOT_MERGED: ReadonlySet<string> = new Set(['tasks']);

/**
 * The capabilities of the endpoint: tools, prompts and resources always (lists are merged, and the gateway says
 * when one changes), with `listChanged`; `resources.subscribe`, `logging` and `completions` when any server
 * known offers them; any other capability a server offers, as the first server to offer it gives it, except tasks.
 */
export function mergedCapabilities(members: readonly SetMember[]): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  let subscribe = false;
  for (const member of members) {
    const capabilities = member.profile?.capabilities;
    if (!capabilities) continue;
    for (const [name, value] of Object.entries(capabilities)) if (!(name in merged) && !NOT_MERGED.has(name)) merged[name] = value;
    const resources = capabilities.resources as { subscribe?: unknown } | undefined;
    if (resources?.subscribe === true) subscribe = true;
  }
  merged.tools = { listChanged: true };
  merged.prompts = { listChanged: true };
  merged.resources = { listChanged: true, ...(subscribe ? { subscribe: true } : {}) };
  return merged;
}

/** Each server's instructions under a heading of its name, in configuration order; undefined when none has any. */
export function mergedInstructions(members: readonly SetMember[]): string | undefined {
  const sections = members.filter((m) => m.profile?.instructions).map((m) => `## ${m.name}\n\n${m.profile!.instructions!.trim()}`);
  return sections.length > 0 ? sections.join('\n\n') : undefined;
}


/**
 * The gateway's answer to a client's `initialize`: the revision the client asked for when the gateway speaks it
 * (else the newest it does), the merged capabilities and instructions, and the gateway's own `serverInfo`. A server
 * known only by a kept profile of another revision adds nothing (see `profileAtRevision`).
 */
export function initializeResult(requested: unknown, members: readonly SetMember[], info: GatewayInfo): Record<string, unknown> {
  const protocolVersion = negotiatedSessionVersion(requested);
  // A profile recalled from the store (a server this caller could not open) counts only at the revision it was learnt at.
  const current = members.filter((m) => m.profile !== m.recalled || profileAtRevision(m.recalled, protocolVersion) !== undefined);
  const instructions = mergedInstructions(current);
  return { protocolVersion, capabilities: mergedCapabilities(current), serverInfo: info, ...(instructions ? { instructions } : {}) };
}

/**
 * The gateway's answer to `server/discover` (2026-07-28): the revisions every server that answered supports (in
 * the first one's order; a server whose revisions are not known does not narrow them), the union of capabilities,
 * the gateway's `serverInfo`, and the instructions. When no server's revisions are known, the set answers with an
 * error instead (see `noServerAnswered`).
 */
export function discoverResult(members: readonly SetMember[], info: GatewayInfo): Record<string, unknown> {
  let versions: string[] | undefined;
  for (const member of members) {
    const supported = member.profile?.supportedVersions;
    if (!supported) continue;
    versions = versions === undefined ? [...supported] : versions.filter((v) => supported.includes(v));
  }
  const instructions = mergedInstructions(members);
  return {
    resultType: 'complete',
    supportedVersions: versions ?? [],
    capabilities: mergedCapabilities(members),
    serverInfo: info,
    ...(instructions ? { instructions } : {}),
  };
}
