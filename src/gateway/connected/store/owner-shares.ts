/**
 * The users' shares of a store's ephemeral entries, for the stores of one process (memory, directory): which live
 * entry each user holds and until when. Redis keeps the same in its write script, for every replica together.
 */
import { TokenStoreShareExceededError } from './token-store.js';

/**
 * Follows the ephemeral entries written with an owner. Bounded: it holds only entries the store holds (a store
 * tells it of every removal), plus expired ones until their owner writes again or the map grows past `maxTracked`,
 * when every expired one is dropped.
 *
 * @example
 * const shares = new OwnerShares(200, 20_000);
 * shares.check(owner, store.ephemeralCount >= 10_000, Date.now()); // throws TokenStoreShareExceededError at 200
 * shares.add(owner, 'ticket:abc', Date.now() + 600_000);
 */
export class OwnerShares {
  /** Each owner's live keys, with their expiry in milliseconds since the epoch. */
  private readonly owners = new Map<string, Map<string, number>>();
  /** The owner of each key followed. */
  private readonly ownerOf = new Map<string, string>();

  /**
   * @param share - Live entries one owner may hold under pressure.
   * @param maxTracked - Keys followed before expired ones are swept: the store's most ephemeral entries.
   */
  constructor(
    readonly share: number,
    private readonly maxTracked: number,
  ) {}

  /**
   * Throws when `owner` holds its share of live entries and `underPressure` (the store is at least half full);
   * call before writing a new ephemeral key of `owner`.
   *
   * @throws TokenStoreShareExceededError with the milliseconds until its oldest entry expires.
   */
  check(owner: string, underPressure: boolean, now: number): void {
    const held = this.owners.get(owner);
    if (held === undefined || held.size < this.share || !underPressure) return;
    let oldest = Infinity;
    for (const [key, expiresAt] of held) {
      if (expiresAt <= now) this.remove(key);
      else oldest = Math.min(oldest, expiresAt);
    }
    if (held.size >= this.share) throw new TokenStoreShareExceededError(this.share, oldest - now);
  }

  /** Records that `owner` holds `key` until `expiresAt` (replacing what was recorded of `key`). */
  add(owner: string, key: string, expiresAt: number, now: number): void {
    this.remove(key);
    let held = this.owners.get(owner);
    if (held === undefined) this.owners.set(owner, (held = new Map()));
    held.set(key, expiresAt);
    this.ownerOf.set(key, owner);
    if (this.ownerOf.size > this.maxTracked) this.sweep(now);
  }

  /** Forgets `key`: the store removed it (deleted, taken, expired). */
  remove(key: string): void {
    const owner = this.ownerOf.get(key);
    if (owner === undefined) return;
    this.ownerOf.delete(key);
    const held = this.owners.get(owner);
    held?.delete(key);
    if (held?.size === 0) this.owners.delete(owner);
  }

  /** Forgets everything (the store was closed). */
  clear(): void {
    this.owners.clear();
    this.ownerOf.clear();
  }

  private sweep(now: number): void {
    for (const [key, owner] of this.ownerOf) if ((this.owners.get(owner)?.get(key) ?? 0) <= now) this.remove(key);
  }
}
