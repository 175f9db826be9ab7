/**
 * A request's session refusal, held back while whoever handed the request on may still recover it: a server set
 * whose server no longer knows the session (its process died, or it restarted) opens a new session there and sends
 * the request again, and the client gets that answer instead. Reported then, the refusal would mark a request the
 * client got its answer to as denied, in the request log, the audit record and the metrics.
 */
export interface HeldSessionRefusals {
  /** The refusal stands (the request is not sent again): the held report is made now, as it would have been. */
  report(): void;
  /** The request is sent again: the held report is forgotten, and what the next attempt brings is recorded. */
  drop(): void;
}

/** The held report of each request whose refusals are held (undefined until one is refused). */
const HELD = new WeakMap<object, { report: (() => void) | undefined }>();

/**
 * Holds back the session refusals reported for `req` ({@link keepHeldRefusal}) until `report` or `drop` is called;
 * one of them must be, once the attempt has ended. Only the first refusal is kept: one attempt is refused once.
 *
 * @example
 * const held = holdSessionRefusals(req);
 * await member.handle(req, res, context);
 * if (watch.lost) held.drop(); // sent again in a new session
 * else held.report();
 */
export function holdSessionRefusals(req: object): HeldSessionRefusals {
  const held: { report: (() => void) | undefined } = { report: undefined };
  HELD.set(req, held);
  const end = (): (() => void) | undefined => {
    if (HELD.get(req) === held) HELD.delete(req);
    const report = held.report;
    held.report = undefined;
    return report;
  };
  return {
    report: () => end()?.(),
    drop: () => void end(),
  };
}

/**
 * Keeps `report` for later when `req`'s session refusals are held ({@link holdSessionRefusals}), and says whether
 * it was: when false, the caller reports now.
 */
export function keepHeldRefusal(req: object, report: () => void): boolean {
  const held = HELD.get(req);
  if (held === undefined) return false;
  held.report ??= report;
  return true;
}
