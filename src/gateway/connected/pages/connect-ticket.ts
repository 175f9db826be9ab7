/**
 * The connect ticket: what a connect link names. The link `<gateway origin>/connect/<ticketId>` carries only a
 * random id; who asked, for which server and scope stays sealed in the token store for 10 minutes. Opening the
 * link grants nothing: the browser must first sign in as that same user.
 */
import { createHash, randomBytes } from 'node:crypto';
import { userKey, type UserRef } from '../oauth/connection-record.js';
import type { TokenStore } from '../store/token-store.js';
import { pendingLoginKey } from './gateway-login.js';
import type { PageSealer } from './page-ports.js';

/** Life of a ticket, in milliseconds: 10 minutes. */
export const CONNECT_TICKET_TTL_MS = 10 * 60_000;

/** What a ticket holds. */
export interface ConnectTicket {
  /** The caller who needs the connection: issuer and subject of their verified token. */
  readonly user: UserRef;
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  /** Scopes to ask the upstream for (space-separated), e.g. those of an `insufficient_scope` challenge. */
  readonly scope?: string;
  /** Expiry, in milliseconds since the epoch. */
  readonly expiresAt: number;
  /** The `state` of the one pending sign-in opened from this ticket's link, replaced when it is opened again. */
  readonly loginState?: string;
}

/** What the ticket index holds: the current ticket of one user, server and scope. */
interface TicketIndex {
  readonly ticketId: string;
}

/** A ticket id: 32 random bytes, base64url (43 characters). */
const TICKET_ID = /^[A-Za-z0-9_-]{43}$/;

/** Whether `value` has the form of a ticket id; anything else is never looked up. */
export function isTicketId(value: string): boolean {
  return TICKET_ID.test(value);
}

/** The store key of a ticket. */
export function ticketKey(ticketId: string): string {
  return `ticket:${ticketId}`;
}

/**
 * The store key of the current ticket of `user`, `server` and `scope`: `ticketof:<user key>:<server>:<SHA-256 of
 * the scope>`, so that a user's repeated calls and lists for one server share one ticket instead of one each.
 */
export function ticketIndexKey(user: UserRef, server: string, scope: string | undefined): string {
  return `ticketof:${userKey(user)}:${server}:${createHash('sha256').update(scope ?? '').digest('base64url')}`;
}

/**
 * The ticket for `user`, `server` and `scope`: the current one when still good, else a new one kept sealed under
 * `ticket:<id>` for {@link CONNECT_TICKET_TTL_MS}, with its index under {@link ticketIndexKey} for as long. A flood
 * of connect answers for one user and server thus writes one ticket, not one per answer.
 *
 * @returns the ticket id, for the link `<gateway origin>/connect/<ticketId>`
 * @throws TokenStoreFullError when the store is at its bound
 * @example
 * const ticketId = await createConnectTicket(store, sealer, { user: { issuer, subject }, server: 'notes' });
 * const link = new URL(`/connect/${ticketId}`, gatewayOrigin);
 */
export async function createConnectTicket(
  store: TokenStore,
  sealer: PageSealer,
  input: { user: UserRef; server: string; scope?: string },
  now: () => number = Date.now,
): Promise<string> {
  const scope = input.scope ? input.scope : undefined;
  const indexKey = ticketIndexKey(input.user, input.server, scope);
  const sealedIndex = await store.get(indexKey);
  const current = sealedIndex === undefined ? undefined : await currentTicket(store, sealer, indexKey, sealedIndex, now);
  if (current !== undefined) return current;
  const ticketId = randomBytes(32).toString('base64url');
  const ticket: ConnectTicket = {
    user: { issuer: input.user.issuer, subject: input.user.subject },
    server: input.server,
    ...(scope ? { scope } : {}),
    expiresAt: now() + CONNECT_TICKET_TTL_MS,
  };
  await writeTicket(store, sealer, ticketId, ticket, now);
  const index: TicketIndex = { ticketId };
  const sealedNext = await sealer.seal(indexKey, index, CONNECT_TICKET_TTL_MS);
  if (await store.compareAndSet(indexKey, sealedIndex, sealedNext, CONNECT_TICKET_TTL_MS, userKey(ticket.user))) return ticketId;
  // Another answer for the same user made a ticket meanwhile: hand out that one, and drop ours.
  const won = await store.get(indexKey);
  const theirs = won === undefined ? undefined : await currentTicket(store, sealer, indexKey, won, now);
  if (theirs === undefined) return ticketId;
  await store.delete(ticketKey(ticketId));
  return theirs;
}

/** The ticket id the index names when that ticket is still good. */
async function currentTicket(store: TokenStore, sealer: PageSealer, indexKey: string, sealed: string, now: () => number): Promise<string | undefined> {
  const index = await sealer.open<TicketIndex>(indexKey, sealed);
  if (!index || typeof index.ticketId !== 'string') return undefined;
  return (await readConnectTicket(store, sealer, index.ticketId, now)) ? index.ticketId : undefined;
}

/** Writes `ticket` sealed under `ticket:<id>`, expiring at its `expiresAt`, counted against its user's share. */
async function writeTicket(store: TokenStore, sealer: PageSealer, ticketId: string, ticket: ConnectTicket, now: () => number): Promise<void> {
  const key = ticketKey(ticketId);
  const ttlMs = Math.max(1, ticket.expiresAt - now());
  await store.set(key, await sealer.seal(key, ticket, ttlMs), ttlMs, userKey(ticket.user));
}

/**
 * Gives a live ticket {@link CONNECT_TICKET_TTL_MS} more from now, and records `loginState` as its one pending
 * sign-in: called when its link is opened, so that the two sign-ins that follow (the gateway's, the upstream's)
 * have their full time. The index is extended with it. Returns the ticket as written.
 */
export async function renewConnectTicket(
  store: TokenStore,
  sealer: PageSealer,
  ticketId: string,
  ticket: ConnectTicket,
  loginState: string | undefined,
  now: () => number = Date.now,
): Promise<ConnectTicket> {
  const { loginState: _previous, ...rest } = ticket;
  const renewed: ConnectTicket = { ...rest, ...(loginState !== undefined ? { loginState } : {}), expiresAt: now() + CONNECT_TICKET_TTL_MS };
  await writeTicket(store, sealer, ticketId, renewed, now);
  const indexKey = ticketIndexKey(ticket.user, ticket.server, ticket.scope);
  const sealedIndex = await store.get(indexKey);
  const index = sealedIndex === undefined ? undefined : await sealer.open<TicketIndex>(indexKey, sealedIndex);
  if (index?.ticketId === ticketId) {
    await store.compareAndSet(indexKey, sealedIndex, await sealer.seal(indexKey, index, CONNECT_TICKET_TTL_MS), CONNECT_TICKET_TTL_MS, userKey(ticket.user));
  }
  return renewed;
}

/** The ticket named `ticketId`, or undefined when malformed, unknown, expired, used or not opening. */
export async function readConnectTicket(store: TokenStore, sealer: PageSealer, ticketId: string, now: () => number = Date.now): Promise<ConnectTicket | undefined> {
  if (!isTicketId(ticketId)) return undefined;
  const key = ticketKey(ticketId);
  const sealed = await store.get(key);
  if (sealed === undefined) return undefined;
  const ticket = await sealer.open<ConnectTicket>(key, sealed);
  if (!ticket || typeof ticket.expiresAt !== 'number' || ticket.expiresAt <= now()) return undefined;
  return ticket;
}

/**
 * Removes a ticket: used, or burnt after someone else opened it. Its index and pending sign-in expire with it
 * (an index naming a ticket gone is ignored; a sign-in for it finds no ticket).
 */
export async function burnConnectTicket(store: TokenStore, ticketId: string): Promise<void> {
  if (isTicketId(ticketId)) await store.delete(ticketKey(ticketId));
}

/** Most tickets of one user ended in one call (one per server and scope asked for). */
export const MAX_USER_TICKETS = 1000;

/**
 * Ends every live connect ticket of `user` (only those for `server`, when given): the ticket, its index and the
 * pending sign-in opened from its link. An authorization already under way then cannot complete (its callback finds
 * no ticket, and no code is exchanged). For the revoke command, so that revoking a user also stops their connects in
 * progress.
 *
 * @returns the ids of the tickets ended, to find their pending upstream authorizations by
 * @example
 * const ended = await endUserTickets(store, sealer, { issuer, subject: 'alice' });
 */
export async function endUserTickets(store: TokenStore, sealer: PageSealer, user: UserRef, server?: string): Promise<string[]> {
  const ended: string[] = [];
  for (const indexKey of await store.keys(`ticketof:${userKey(user)}:`, MAX_USER_TICKETS)) {
    const sealed = await store.get(indexKey);
    const index = sealed === undefined ? undefined : await sealer.open<TicketIndex>(indexKey, sealed);
    const ticketId = typeof index?.ticketId === 'string' && isTicketId(index.ticketId) ? index.ticketId : undefined;
    const ticket = ticketId === undefined ? undefined : await readConnectTicket(store, sealer, ticketId);
    if (server !== undefined && ticket?.server !== server) continue;
    if (ticket?.loginState !== undefined) await store.delete(pendingLoginKey(ticket.loginState));
    if (ticketId !== undefined) {
      await store.delete(ticketKey(ticketId));
      ended.push(ticketId);
    }
    await store.delete(indexKey);
  }
  return ended;
}
