/**
 * The connect ticket: what a connect link names. The link `<gateway origin>/connect/<ticketId>` carries only a
 * random id; who asked, for which server and scope stays sealed in the token store for 10 minutes. Opening the
 * link grants nothing: the browser must first sign in as that same user.
 */
import { randomBytes } from 'node:crypto';
import type { UserRef } from '../oauth/connection-record.js';
import type { TokenStore } from '../store/token-store.js';
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
 * Creates a ticket for `user` and `server` and keeps it sealed under `ticket:<id>` for {@link CONNECT_TICKET_TTL_MS}.
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
  const ticketId = randomBytes(32).toString('base64url');
  const ticket: ConnectTicket = {
    user: { issuer: input.user.issuer, subject: input.user.subject },
    server: input.server,
    ...(input.scope ? { scope: input.scope } : {}),
    expiresAt: now() + CONNECT_TICKET_TTL_MS,
  };
  const key = ticketKey(ticketId);
  await store.set(key, await sealer.seal(key, ticket, CONNECT_TICKET_TTL_MS), CONNECT_TICKET_TTL_MS);
  return ticketId;
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

/** Removes a ticket: used, or burnt after someone else opened it. */
export async function burnConnectTicket(store: TokenStore, ticketId: string): Promise<void> {
  if (isTicketId(ticketId)) await store.delete(ticketKey(ticketId));
}
