/**
 * Least time between two `list_changed` notifications of one kind on one stream to the client, in milliseconds:
 * the client lists every server again anyway, so several servers' changes at once need one notification.
 */
export const LIST_CHANGED_COALESCE_MS = 100;

/** Most kinds of `list_changed` held in a window at once; a further kind passes unheld (MCP names three). */
const MAX_WINDOWED_KINDS = 8;

/** Longest method name given a window, in characters; a longer one passes unheld. */
const MAX_WINDOWED_METHOD_CHARS = 128;

/** One kind's window: whether a notification of it was held back since the window opened. */
interface Window {
  timer: NodeJS.Timeout;
  held: boolean;
}

/**
 * Collapses the `list_changed` notifications of one stream to the client: of each kind (its method), the first
 * passes and opens a window of `windowMs`; any more within the window are held back, and if any were, exactly one
 * more of that kind is sent (`send`) when the window ends, which opens the next window. A change announced while
 * the client was already listing again is so never lost, and a burst costs the client two lists at most.
 * {@link close} (when the stream ends) clears every timer, so nothing is sent after; timers never keep the
 * process alive.
 *
 * @example
 * const window = new ListChangedWindow((method) => writeEvent(res, { jsonrpc: '2.0', method }));
 * if (window.pass('notifications/tools/list_changed')) res.write(event);
 * res.once('close', () => window.close());
 */
export class ListChangedWindow {
  private readonly windows = new Map<string, Window>();
  private closed = false;

  /**
   * @param send - Sends one trailing notification of that method on the stream.
   * @param windowMs - The window, in milliseconds. Default {@link LIST_CHANGED_COALESCE_MS}.
   */
  constructor(
    private readonly send: (method: string) => void,
    private readonly windowMs: number = LIST_CHANGED_COALESCE_MS,
  ) {}

  /** Whether a `list_changed` of `method` may pass now; when not, one is sent as the window ends. */
  pass(method: string): boolean {
    if (this.closed) return false;
    const open = this.windows.get(method);
    if (open) {
      open.held = true;
      return false;
    }
    // Past the bounds the notification passes: a spare one costs a list, a lost one a stale list for good.
    if (this.windows.size >= MAX_WINDOWED_KINDS || method.length > MAX_WINDOWED_METHOD_CHARS) return true;
    this.open(method);
    return true;
  }

  /** Ends every window without sending anything more. Idempotent. */
  close(): void {
    this.closed = true;
    for (const window of this.windows.values()) clearTimeout(window.timer);
    this.windows.clear();
  }

  private open(method: string): void {
    const window: Window = { held: false, timer: setTimeout(() => this.ended(method, window), this.windowMs) };
    window.timer.unref();
    this.windows.set(method, window);
  }

  private ended(method: string, window: Window): void {
    this.windows.delete(method);
    if (this.closed || !window.held) return;
    // The trailing notification opens a window of its own: what changes right after it is collapsed again.
    this.open(method);
    this.send(method);
  }
}
