/**
 * How many sign-ins the connections page may start per minute, in this process. Anyone can open that page, and each
 * sign-in it starts is kept in the token store for 10 minutes: without a budget, a stream of requests would fill
 * the store that holds every user's connections. A connect link needs a live ticket, so it draws on no budget.
 */

/** Default sign-ins the connections page may start per minute. */
export const DEFAULT_SIGN_INS_PER_MINUTE = 120;

/** Takes one sign-in from the budget: undefined when granted, else the seconds until the next window. */
export type SignInBudget = () => number | undefined;

/**
 * Creates a budget of `perMinute` sign-ins per fixed one-minute window.
 *
 * @example
 * const take = createSignInBudget(2);
 * take(); take(); take(); // undefined, undefined, then the seconds left in the minute
 */
export function createSignInBudget(perMinute: number = DEFAULT_SIGN_INS_PER_MINUTE, now: () => number = Date.now): SignInBudget {
  let windowStart = 0;
  let used = 0;
  return () => {
    const at = now();
    if (at - windowStart >= 60_000) {
      windowStart = at;
      used = 0;
    }
    if (used < perMinute) {
      used++;
      return undefined;
    }
    return Math.max(1, Math.ceil((windowStart + 60_000 - at) / 1000));
  };
}
