/**
 * The `requestState` the gateway puts in its input-required results (MCP 2026-07-28 `basic/patterns/mrtr`), and its
 * check when the client retries. The client may tamper with it, so it is integrity-protected (HMAC-SHA256) and bound
 * to the caller, the request and a short expiry, and it is one-time (its nonce is claimed in a replay cache), as the
 * pattern's "Server Requirements" ask. It holds no secret and no subject: a digest of the caller only.
 */
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { createMemoryReplayCache, ReplayShareExceededError, type ReplayCache } from '../../../core/limits/replay-cache.js';
import type { JsonRpcRequest } from '../../../core/wire/jsonrpc.js';

/** What starts every state the gateway mints; any other `requestState` is the upstream's and passes unchanged. */
export const REQUEST_STATE_PREFIX = 'mcpg1.';
/** Default life of a state, in milliseconds: 10 minutes, time enough to connect an account in a browser. */
export const DEFAULT_REQUEST_STATE_TTL_MS = 600_000;
/** Longest state read, in characters; anything longer is refused unread. */
export const MAX_REQUEST_STATE_CHARS = 16_384;
/** Longest upstream state carried inside the gateway's (see {@link RequestStateInput.upstreamState}), in characters. */
export const MAX_CARRIED_UPSTREAM_STATE_CHARS = 8_192;
/** Default bound of the replay cache made when none is given, in entries. */
export const DEFAULT_REQUEST_STATE_REPLAY_ENTRIES = 100_000;

const KEY_INFO = 'mcp-oauth-guard request state';

/** Why a state was refused. */
export type RequestStateRefusal = 'malformed' | 'forged' | 'expired' | 'other_caller' | 'other_request' | 'replayed';

/**
 * A state that checks out but cannot be claimed now: its caller holds its share of the used states (see
 * `ReplayCache.claim`). Neither used nor refused: the same retry is accepted after `retryAfterMs` milliseconds.
 */
export interface BusyRequestState {
  readonly busy: true;
  readonly retryAfterMs: number;
}

/** What a verified state says, besides what it was checked against. */
export interface VerifiedRequestState {
  /** The scope a step-up asked for, when the state was minted for one. */
  readonly stepUpScope?: string;
  /** The upstream's own `requestState` the request carried when the gateway answered, to give back to it. */
  readonly upstreamState?: string;
}

/** What a state is minted for. */
export interface RequestStateInput {
  readonly auth: AuthInfo;
  readonly message: JsonRpcRequest;
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  readonly stepUpScope?: string;
  /** An upstream's `requestState` in the request (not the gateway's), carried so the retry gives it back. */
  readonly upstreamState?: string;
}

/** Mints and checks the gateway's request states. */
export interface RequestStates {
  /** A new state for `input`, valid for the codec's TTL. */
  mint(input: RequestStateInput): string;
  /**
   * Checks `state` against the retry `message` of `auth` at `server`, and claims it (one time). Resolves with what
   * it says, or the reason it is refused.
   */
  verify(state: string, message: JsonRpcRequest, auth: AuthInfo, server: string): Promise<VerifiedRequestState | { readonly refused: RequestStateRefusal } | BusyRequestState>;
}

/** Options of {@link createRequestStates}. */
export interface RequestStatesOptions {
  /**
   * The secrets the HMAC keys are derived from (HKDF-SHA256), at least 32 bytes each: the first mints, every one
   * verifies (rotation, as for the token store's secret, `MCP_AUTH_TOKEN_STORE_SECRET`).
   */
  readonly secrets: readonly Uint8Array[];
  /** Life of a state, in milliseconds. Default 600 000 (10 minutes). */
  readonly ttlMs?: number;
  /**
   * Where used nonces are kept until their state expires. Default: one in memory, bounded at 100 000 entries (a
   * fleet shares one, as for DPoP proofs, or a state is one-time per replica only).
   */
  readonly replayCache?: ReplayCache;
  /** Clock, in milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number;
}

/** The payload, with short names: it travels in every retry. */
interface Payload {
  /** Digest of the caller's issuer and subject. */
  c: string;
  m: string;
  /** The tool or prompt name, or the resource URI. */
  n: string;
  /** Digest of the arguments. */
  a: string;
  s: string;
  /** Expiry, milliseconds since the epoch. */
  x: number;
  /** Nonce. */
  r: string;
  k?: string;
  u?: string;
}

/**
 * Makes the request-state codec: `mcpg1.` + base64url(JSON payload) + `.` + base64url(HMAC-SHA256 over what comes
 * before). The payload: caller digest, method, name, arguments digest, server, expiry, nonce.
 *
 * @throws RangeError when a secret is shorter than 32 bytes or none is given.
 * @example
 * const states = createRequestStates({ secrets: [randomBytes(32)] });
 * const state = states.mint({ auth, message, server: '' });
 * await states.verify(state, retry, auth, ''); // {} — and { refused: 'replayed' } the second time
 */
export function createRequestStates(options: RequestStatesOptions): RequestStates {
  if (options.secrets.length === 0 || options.secrets.some((secret) => secret.byteLength < 32)) {
    throw new RangeError('request state secrets must be at least 32 bytes each');
  }
  const keys = options.secrets.map((secret) => Buffer.from(hkdfSync('sha256', secret, new Uint8Array(0), KEY_INFO, 32)));
  const ttlMs = options.ttlMs ?? DEFAULT_REQUEST_STATE_TTL_MS;
  const now = options.now ?? Date.now;
  const replay = options.replayCache ?? createMemoryReplayCache({ maxEntries: DEFAULT_REQUEST_STATE_REPLAY_ENTRIES, now });
  const mac = (key: Buffer, text: string): Buffer => createHmac('sha256', key).update(text).digest();
  return {
    mint(input) {
      const target = requestTarget(input.message);
      const payload: Payload = { c: callerDigest(input.auth), m: input.message.method, n: target.name, a: target.arguments, s: input.server, x: now() + ttlMs, r: randomBytes(16).toString('base64url') };
      if (input.stepUpScope !== undefined) payload.k = input.stepUpScope;
      if (input.upstreamState !== undefined && input.upstreamState.length <= MAX_CARRIED_UPSTREAM_STATE_CHARS) payload.u = input.upstreamState;
      const signed = `${REQUEST_STATE_PREFIX}${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
      return `${signed}.${mac(keys[0]!, signed).toString('base64url')}`;
    },
    async verify(state, message, auth, server) {
      const dot = state.lastIndexOf('.');
      if (state.length > MAX_REQUEST_STATE_CHARS || !state.startsWith(REQUEST_STATE_PREFIX) || dot <= REQUEST_STATE_PREFIX.length) return { refused: 'malformed' };
      const signed = state.slice(0, dot);
      const given = Buffer.from(state.slice(dot + 1), 'base64url');
      if (!keys.some((key) => timingEqual(mac(key, signed), given))) return { refused: 'forged' };
      const payload = parsePayload(signed.slice(REQUEST_STATE_PREFIX.length));
      if (!payload) return { refused: 'malformed' };
      const at = now();
      if (payload.x <= at) return { refused: 'expired' };
      if (payload.c !== callerDigest(auth)) return { refused: 'other_caller' };
      const target = requestTarget(message);
      if (payload.m !== message.method || payload.n !== target.name || payload.a !== target.arguments || payload.s !== server) return { refused: 'other_request' };
      // Claimed last: a state refused for another reason does not use up its nonce.
      let claimed: boolean;
      try {
        claimed = await replay.claim(payload.r, payload.x, payload.c);
      } catch (error) {
        // The caller holds its share: its retry waits (429), while every other caller is served.
        if (error instanceof ReplayShareExceededError) return { busy: true, retryAfterMs: error.retryAfterMs };
        // A full cache cannot tell a replay from a first use: refused, never accepted.
        claimed = false;
      }
      if (!claimed) return { refused: 'replayed' };
      return { ...(payload.k !== undefined ? { stepUpScope: payload.k } : {}), ...(payload.u !== undefined ? { upstreamState: payload.u } : {}) };
    },
  };
}

/** Whether `state` is one the gateway mints (it may still be forged): the others belong to the upstream. */
export function isGatewayRequestState(state: unknown): state is string {
  return typeof state === 'string' && state.startsWith(REQUEST_STATE_PREFIX);
}

/** A digest of the caller's issuer and subject: the user a state is bound to. */
function callerDigest(auth: AuthInfo): string {
  return createHash('sha256').update(`${auth.extra.iss ?? ''}\n${auth.extra.sub ?? ''}`).digest('base64url');
}

/** What identifies the request a state is for: its tool or prompt name (or resource URI) and a digest of its arguments. */
function requestTarget(message: JsonRpcRequest): { name: string; arguments: string } {
  const params = message.params ?? {};
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : '';
  return { name, arguments: createHash('sha256').update(canonicalJson(params.arguments ?? null)).digest('base64url') };
}

/**
 * JSON with object keys in sorted order, so that a client that re-serializes the same arguments in another key
 * order still matches. Nesting is bounded by the guard's body parser.
 */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function timingEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function parsePayload(encoded: string): Payload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const p = value as Record<string, unknown>;
  const strings = ['c', 'm', 'n', 'a', 's', 'r'].every((key) => typeof p[key] === 'string');
  if (!strings || typeof p.x !== 'number' || (p.k !== undefined && typeof p.k !== 'string') || (p.u !== undefined && typeof p.u !== 'string')) return undefined;
  return p as unknown as Payload;
}
