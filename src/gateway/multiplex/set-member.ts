import { profileOfResult, type KeptProfiles } from '../upstream-auth/kept-profile.js';
import type { ToolPins } from '../pins/tool-pins.js';
import type { Upstream } from '../upstream/upstream.js';

/**
 * What a server told the gateway of itself in its `initialize` answer (or `server/discover`): what the merged
 * `initialize` and `server/discover` answers are built from. Learnt from the first session opened with it, and
 * kept, so that later sessions open it only when they use it.
 */
export interface ServerProfile {
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly instructions?: string;
  /** The revision it answered `initialize` with. */
  readonly protocolVersion?: string;
  /** The revisions it supports (`server/discover`). */
  readonly supportedVersions?: readonly string[];
}

/** One server of a server set: its upstream and what the set keeps about it. */
export interface SetMember {
  /** Its name (`servers.<name>`): the prefix of its tools and prompts. */
  readonly name: string;
  readonly upstream: Upstream;
  /** Whether a tool of its own name is exposed (`tools` include and exclude). */
  readonly selects: (tool: string) => boolean;
  /** The pinned tool definitions (`MCP_AUTH_PINS`), shared by every server; absent when off. */
  readonly pins?: ToolPins;
  /** Time allowed for its part of a merged list, in milliseconds. */
  readonly listTimeoutMs: number;
  /** How long its pages are served again to any caller, in milliseconds (`listReuseMs`); absent: only pages it marks public. */
  readonly listReuseMs?: number;
  /**
   * Whether its requests carry nothing of the caller (its credential is the gateway's own, no identity headers or
   * environment): identical list requests outside a session then share one exchange with it.
   */
  readonly callerBlind: boolean;
  /** Its profile once known. */
  profile: ServerProfile | undefined;
  /** In connected mode: its kept profile (capabilities and revision), across restarts and replicas. */
  readonly kept?: KeptProfiles;
  /**
   * The kept profile, while it is {@link profile}: the server is then still opened with a session, as one whose
   * profile is unknown.
   */
  recalled?: ServerProfile;
  /** When it was last asked `server/discover` without giving its revisions (ms since the epoch), so it is not asked on every request. */
  discoverAskedAt?: number;
}

/** Reads the profile from an `initialize` or `server/discover` result; undefined when the result is not one. */
export function profileOf(result: unknown): ServerProfile | undefined {
  const kept = profileOfResult(result);
  if (kept === undefined) return undefined;
  const { instructions, supportedVersions } = result as Record<string, unknown>;
  return {
    capabilities: kept.capabilities,
    ...(typeof instructions === 'string' ? { instructions } : {}),
    ...(kept.protocolVersion !== undefined ? { protocolVersion: kept.protocolVersion } : {}),
    ...(Array.isArray(supportedVersions) ? { supportedVersions: supportedVersions.filter((v): v is string => typeof v === 'string') } : {}),
  };
}

/**
 * Takes the kept profile of each server in connected mode whose profile is not known in this process (a restart,
 * another replica) or is known only from the store, so that the capabilities answered to a user who has not
 * connected it are its own, and a profile another replica learnt since replaces the one recalled. Reading costs no
 * store round trip once a profile is known (see `KeptProfiles.read`).
 */
export async function recallProfiles(members: readonly SetMember[]): Promise<void> {
  const recallable = (m: SetMember): boolean => m.kept !== undefined && (m.profile === undefined || m.profile === m.recalled);
  await Promise.all(
    members.filter(recallable).map(async (member) => {
      const kept = await member.kept!.read();
      if (kept !== undefined && kept !== member.recalled && recallable(member)) member.profile = member.recalled = kept;
    }),
  );
}

/**
 * The server answered an `initialize` (or `server/discover`) with `profile`: known from now on, and kept when it is in
 * connected mode. A server in connected mode answered one user, with that user's token: its `instructions` may speak of
 * that user's account, so they are not kept for the answers every user gets.
 */
export function learnProfile(member: SetMember, profile: ServerProfile): void {
  if (member.kept !== undefined && profile.instructions !== undefined) {
    const { instructions: _instructions, ...shared } = profile;
    profile = shared;
  }
  member.profile = profile;
  member.recalled = undefined;
  void member.kept?.learnt(profile);
}
