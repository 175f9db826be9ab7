/**
 * How many sign-ins the connections page may start per minute, in this process. Anyone can open that page, and each
 * sign-in it starts is kept in the token store for 10 minutes: without a budget, a stream of requests would fill
 * the store that holds every user's connections. A connect link needs a live ticket, so it draws on no budget.
 *
 * The budget is per client address group (an IPv4 address, an IPv6 /64: `addressGroup`), so that one source
 * spending its own leaves every other source its sign-ins; a ceiling for the whole process stays as a last resort
 * against many sources at once, and bounds what the page can write to the store (600 a minute, each kept 10
 * minutes: at most 6 000 of the store's 20 000 short-lived entries).
 */

/** Default sign-ins the connections page may start per minute, from every address together: the last resort. */
export const DEFAULT_SIGN_INS_PER_MINUTE = 600;
/** Default sign-ins the connections page may start per minute from one address group. */
export const DEFAULT_SIGN_INS_PER_ADDRESS_PER_MINUTE = 10;

/**
 * Takes one sign-in from the budget of `address` (its `addressGroup`, undefined when unknown: such requests share
 * one budget): undefined when granted, else the seconds until the window that refused it ends.
 */
export type SignInBudget = (address: string | undefined) => number | undefined;

/** One fixed window of one-minute: when it began, and how many sign-ins it granted. */
interface Window {
  start: number;
  used: number;
}

const WINDOW_MS = 60_000;

/**
 * Creates a budget of `perAddress` sign-ins per fixed one-minute window for each address group, and `perMinute`
 * for all of them together. An address's window is kept only once it was granted a sign-in, so the windows kept
 * are at most `perMinute` live ones (ended ones are dropped when there are more): bounded whatever the addresses.
 *
 * @example
 * const take = createSignInBudget({ perMinute: 100, perAddress: 2 });
 * take('192.0.2.1'); take('192.0.2.1'); take('192.0.2.1'); // undefined, undefined, then the seconds left in its minute
 * take('198.51.100.7'); // undefined: another address has its own
 */
export function createSignInBudget(options: { perMinute?: number; perAddress?: number; now?: () => number } = {}): SignInBudget {
  const perMinute = options.perMinute ?? DEFAULT_SIGN_INS_PER_MINUTE;
  const perAddress = options.perAddress ?? DEFAULT_SIGN_INS_PER_ADDRESS_PER_MINUTE;
  const now = options.now ?? Date.now;
  const all: Window = { start: 0, used: 0 };
  const windows = new Map<string, Window>();
  const secondsLeft = (window: Window, at: number): number => Math.max(1, Math.ceil((window.start + WINDOW_MS - at) / 1000));
  return (address) => {
    const at = now();
    if (at - all.start >= WINDOW_MS) Object.assign(all, { start: at, used: 0 });
    const key = address ?? '';
    let own = windows.get(key);
    if (own !== undefined && at - own.start >= WINDOW_MS) Object.assign(own, { start: at, used: 0 });
    if (own !== undefined && own.used >= perAddress) return secondsLeft(own, at);
    if (all.used >= perMinute) return secondsLeft(all, at);
    if (own === undefined) {
      if (windows.size >= perMinute) for (const [other, window] of windows) if (at - window.start >= WINDOW_MS) windows.delete(other);
      windows.set(key, (own = { start: at, used: 0 }));
    }
    own.used++;
    all.used++;
    return undefined;
  };
}
