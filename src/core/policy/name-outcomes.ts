/**
 * The list-time outcomes of conditions that read of the request only `mcp.method`, `mcp.name` and `server`
 * (`mcp.name.startsWith('read_')`): such a condition decides the same for one caller and one item every time, so a
 * caller listing the same 1,000 tools again gets each item's outcome from here instead of running CEL 1,000 times.
 * Filled at list time only, from the names the servers listed (a call still runs its condition).
 *
 * One map for every caller, bounded in characters of its keys whatever names are listed: when full, it starts
 * again empty. A caller is told apart by the identity its verified token keeps ({@link callerKey}); a caller
 * without one (a custom verifier's unfrozen claims) is never remembered.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import { callerKey } from './condition-request.js';
import type { CompiledCondition, ConditionFailure } from './policy-condition.js';

/** Most characters held together, names and a fixed 64 per entry (some 16 MiB in all): over 100,000 listed items. */
const MAX_KEY_CHARACTERS = 8 * 1_048_576;

/** Outcomes by caller, condition, `method` and `server` joined, then name: no key is built per item. */
const outcomes = new Map<number, Map<CompiledCondition, Map<string, Map<string, boolean | ConditionFailure>>>>();
let characters = 0;

/**
 * The outcome of `condition` for `auth` on the item `name` used by `method` on `server`: remembered, or `decide()`d
 * and remembered.
 *
 * @example
 * const outcome = nameOutcome(auth, condition, 'tools/call', '', 'read_notes', () => condition.evaluate(auth, request));
 */
export function nameOutcome(auth: AuthInfo, condition: CompiledCondition, method: string, server: string, name: string, decide: () => boolean | ConditionFailure): boolean | ConditionFailure {
  const known = knownNameOutcome(auth, condition, method, server, name);
  if (known !== undefined) return known;
  const outcome = decide();
  rememberNameOutcome(auth, condition, method, server, name, outcome);
  return outcome;
}

/** The remembered outcome of `condition` for `auth` on the item `name` used by `method` on `server`, if any. */
export function knownNameOutcome(auth: AuthInfo, condition: CompiledCondition, method: string, server: string, name: string): boolean | ConditionFailure | undefined {
  return namesFor(auth, condition, method, server)?.get(name);
}

/** Remembers `outcome` as {@link knownNameOutcome} gives it back (nothing for a caller without a kept identity). */
export function rememberNameOutcome(auth: AuthInfo, condition: CompiledCondition, method: string, server: string, name: string, outcome: boolean | ConditionFailure): void {
  const names = namesFor(auth, condition, method, server);
  if (names === undefined) return;
  // Each entry counted as its name and a fixed overhead, whatever it holds.
  const cost = name.length + 64;
  if (characters + cost > MAX_KEY_CHARACTERS) {
    clearOutcomes();
    namesFor(auth, condition, method, server)!.set(name, outcome);
  } else names.set(name, outcome);
  characters += cost;
}

/**
 * The last place asked for: a list asks for the same caller, condition, method and server once per item, so the
 * chain of maps is walked once per list, not once per item. A caller is what {@link callerKey} reads (the token's
 * kept claims, scopes and client id); the token itself is not held.
 */
let last: { extra: unknown; scopes: unknown; clientId: unknown; condition: CompiledCondition; method: string; server: string; names: Map<string, boolean | ConditionFailure> } | undefined;

/** The outcomes by name of one caller, condition, method and server; undefined for a caller never remembered. */
function namesFor(auth: AuthInfo, condition: CompiledCondition, method: string, server: string): Map<string, boolean | ConditionFailure> | undefined {
  const l = last;
  if (l !== undefined && l.extra === auth.extra && l.condition === condition && l.method === method && l.server === server && l.scopes === auth.scopes && l.clientId === auth.clientId) return l.names;
  const caller = callerKey(auth);
  if (caller === undefined) return undefined;
  const names = placeFor(caller, condition, placeOf(method, server));
  last = { extra: auth.extra, scopes: auth.scopes, clientId: auth.clientId, condition, method, server, names };
  return names;
}

function placeOf(method: string, server: string): string {
  return server === '' ? method : `${method}\n${server}`;
}

function clearOutcomes(): void {
  outcomes.clear();
  characters = 0;
  last = undefined;
}

function placeFor(caller: number, condition: CompiledCondition, place: string): Map<string, boolean | ConditionFailure> {
  let byCondition = outcomes.get(caller);
  if (byCondition === undefined) outcomes.set(caller, (byCondition = new Map()));
  let byPlace = byCondition.get(condition);
  if (byPlace === undefined) byCondition.set(condition, (byPlace = new Map()));
  let names = byPlace.get(place);
  if (names === undefined) {
    byPlace.set(place, (names = new Map()));
    characters += place.length + 64;
  }
  return names;
}
