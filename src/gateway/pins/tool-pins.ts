/**
 * The gateway's pinned tool definitions at run time: every `tools/list` answer of a server passes through
 * {@link ToolPins.observe}, which digests each tool and compares it with its pin; `tools/call` asks
 * {@link ToolPins.refuses}. In `warn` a changed or new tool is logged (once per change) and counted; in `enforce`
 * it is also hidden from lists and its calls are refused as an unknown tool's, until an operator accepts it
 * (`pins accept`, or a pin file reloaded). A server with no pins at all is pinned on first sight.
 */
import { emitWarning, formatLogLine, writeSafely, type LineSink } from '../../core/kernel/log-line.js';
import { WarningLimiter } from '../../core/kernel/warning-limiter.js';
import { describeDifferences, pinDifferences } from './pin-diff.js';
import { compareListing } from './compare-listing.js';
import { pinOf, MAX_PINNED_TOOLS_PER_SERVER, type PinSet, type ToolPin } from './pin-document.js';
import { PIN_FILE_SETTING, type PinChange, type PinStore } from './pin-store.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { shortDigest, type ToolDigest } from './tool-digest.js';
import { ToolDigestMemo } from './tool-digest-memo.js';
import { StartupComparisons } from './startup-comparison.js';

/** `MCP_AUTH_PINS`: off (nothing digested), warn (log and count), enforce (also hide and refuse). */
export type PinsMode = 'off' | 'warn' | 'enforce';

/** How a listed tool differs from its pins: `changed` (its definition), `added` (a tool with no pin). */
export type PinMismatch = 'changed' | 'added';

/** Options of {@link ToolPins}. */
export interface ToolPinsOptions {
  readonly mode: Exclude<PinsMode, 'off'>;
  readonly store: PinStore;
  /** Receives the information lines (pins made, reloaded). */
  readonly log: LineSink;
  /** Receives the warnings (a tool that differs from its pin, a store that failed). */
  readonly warn: LineSink;
  /** Told of each mismatch logged, for `mcp_guard_tool_pin_mismatches_total`. */
  readonly onMismatch?: (server: string, change: PinMismatch) => void;
  /** How often the store's version is checked for pins written by another process, in milliseconds. Default 2 000. */
  readonly reloadIntervalMs?: number;
  /**
   * How long first-sight trust of a server with no pins lasts at most, in milliseconds. Default 60 000. Trust ends
   * with the first listing's last page, or after this time when that page is never fetched.
   */
  readonly firstSightWindowMs?: number;
  /** How a tool definition is digested. Default `digestTool`; tests count its calls. */
  readonly digest?: (tool: Readonly<Record<string, unknown>>) => ToolDigest;
  /** The clock, in milliseconds: how often a store that cannot be read is warned about. Default `Date.now`. */
  readonly now?: () => number;
}

/** Default {@link ToolPinsOptions.reloadIntervalMs}. */
export const DEFAULT_PIN_RELOAD_INTERVAL_MS = 2_000;

/** How often a store that stays unreadable for the same reason is warned about on its periodic re-reads, in milliseconds. */
export const UNREADABLE_PINS_WARNING_INTERVAL_MS = 60_000;

/** Default {@link ToolPinsOptions.firstSightWindowMs}: a paginated first listing is fetched well within a minute. */
export const DEFAULT_FIRST_SIGHT_WINDOW_MS = 60_000;

/** What the gateway last saw of one server: each tool's digest, and the mismatch last logged for it. */
class SeenServer {
  readonly digests = new Map<string, string>();
  readonly reported = new Map<string, string>();
}

/** The warning's key of a store that now holds no pins, beside those of reasons it could not be read. */
const EMPTIED = 'holds no pins';

/** See the module's description. */
export class ToolPins {
  /**
   * Changes whenever what is hidden or refused may change: pins made, accepted or reloaded, or a tool listed with a
   * definition that differs from its pin and from the one seen last (or back to its pin). Part of any cache key of a
   * list: a list kept under an older generation is compared with the pins again.
   */
  generation = 0;
  /** The start-up comparisons in progress (`enforce` only): requests for their servers wait for them. */
  readonly startup = new StartupComparisons();
  private pins: PinSet = new Map();
  private readonly seen = new Map<string, SeenServer>();
  /** Servers being pinned on first sight, with when it began: every page of their first listing is pinned. */
  private readonly trusting = new Map<string, number>();
  private storedVersion = '';
  /** Whether the store was found holding none of the pins in force (see `readAgain`), and not written since. */
  private storeEmptied = false;
  private timer: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  /** A store that cannot be read is re-read every interval: its warning is repeated once a minute, not each time. */
  private readonly unreadable: WarningLimiter;
  /** Each list served again is compared with the pins again, but an unchanged definition is not digested again. */
  private readonly digests: ToolDigestMemo;

  constructor(private readonly options: ToolPinsOptions) {
    this.unreadable = new WarningLimiter(UNREADABLE_PINS_WARNING_INTERVAL_MS, 1, options.now);
    this.digests = new ToolDigestMemo(options.digest);
  }

  /** The mode in force. */
  get mode(): Exclude<PinsMode, 'off'> {
    return this.options.mode;
  }

  /**
   * Reads the pins, then checks the store's version every interval. @throws ConfigurationError when the store holds
   * no pin document (corrupt, too large, unreadable): a start-up error.
   */
  async start(): Promise<void> {
    try {
      this.storedVersion = await this.options.store.version();
      this.pins = await this.options.store.load();
    } catch (error) {
      if (error instanceof ConfigurationError) throw error;
      throw new ConfigurationError(PIN_FILE_SETTING, `is ${this.options.store.name}, and the pins could not be read from it (${error instanceof Error ? error.message.slice(0, 200) : 'error'})`);
    }
    const interval = this.options.reloadIntervalMs ?? DEFAULT_PIN_RELOAD_INTERVAL_MS;
    this.timer = setInterval(() => void this.reloadIfChanged(), interval);
    this.timer.unref();
  }

  /**
   * Reads the pins again (SIGHUP, a policy reload): an accepted tool is shown again from the next list on. A store
   * that cannot be read keeps the pins in force, with a warning.
   */
  async reload(trigger: string): Promise<void> {
    // A reload asked for (SIGHUP) reads the store itself and says what it finds: it does not join a periodic re-read
    // in flight, which says a lasting problem only once a minute.
    while (trigger !== 'changed' && this.reloading !== undefined) await this.reloading;
    return (this.reloading ??= this.readAgain(trigger).finally(() => (this.reloading = undefined)));
  }

  /**
   * Compares one page of a server's `tools/list` with its pins, and returns the tools to show: all of them in
   * `warn`, the pinned ones in `enforce` (`tools` itself when none is hidden).
   *
   * @param lastPage - Whether the page ends the list (no `nextCursor`): a first-sight pinning ends with it.
   */
  observe(server: string, tools: readonly unknown[], lastPage: boolean): readonly unknown[] {
    let pinned = this.pins.get(server);
    if (pinned === undefined) {
      this.pins.set(server, (pinned = new Map()));
      this.trusting.set(server, Date.now());
    }
    const began = this.trusting.get(server);
    // A first listing whose last page is never fetched must not keep trust open: it ends after the window.
    if (began !== undefined && Date.now() - began > (this.options.firstSightWindowMs ?? DEFAULT_FIRST_SIGHT_WINDOW_MS)) this.trusting.delete(server);
    const trusting = this.trusting.has(server);
    const seen = this.seenOf(server);
    const made: PinChange[] = [];
    let hidden: Set<unknown> | undefined;
    for (const listed of compareListing(pinned, tools, (tool) => this.digests.of(tool))) {
      const { item, name } = listed;
      if (name === undefined) {
        // A name that can never be pinned can never be accepted: enforce hides it.
        if (this.options.mode === 'enforce') (hidden ??= new Set()).add(item);
        continue;
      }
      const { digested, pin } = listed;
      const before = seen.digests.get(name);
      if (seen.digests.size < MAX_PINNED_TOOLS_PER_SERVER || seen.digests.has(name)) seen.digests.set(name, digested.digest);
      // A definition seen now that differs from its pin, or one that no longer does, changes what a call may use.
      if (before !== digested.digest && (listed.change !== undefined || (before !== undefined && before !== pin?.digest))) this.generation++;
      if (listed.change === undefined) continue;
      if (pin === undefined && trusting && pinned.size < MAX_PINNED_TOOLS_PER_SERVER) {
        const first = pinOf(digested, 'first-sight');
        pinned.set(name, first);
        made.push({ server, tool: name, pin: first });
        continue;
      }
      this.report(server, name, pin, digested, seen);
      if (this.options.mode === 'enforce') (hidden ??= new Set()).add(item);
    }
    if (lastPage) this.trusting.delete(server);
    if (made.length > 0) this.persist(server, made);
    return hidden === undefined ? tools : tools.filter((item) => !hidden.has(item));
  }

  /**
   * Whether a call to `tool` (the server's own name) is refused: in `enforce`, when it has no pin, or when the
   * definition last listed differs from its pin. A pinned tool not listed yet is allowed: its pin is what was accepted.
   */
  refuses(server: string, tool: string): boolean {
    if (this.options.mode !== 'enforce') return false;
    const pin = this.pins.get(server)?.get(tool);
    if (pin === undefined) return true;
    const last = this.seen.get(server)?.digests.get(tool);
    return last !== undefined && last !== pin.digest;
  }

  /**
   * Whether a list of `server` this process compared named `tool` (the server's own name): a refused tool that was
   * listed differs from its pin or has none; one never listed and never pinned is a name that exists nowhere the
   * gateway knows of. Remembered for as many tools per server as can be pinned.
   */
  listed(server: string, tool: string): boolean {
    return this.seen.get(server)?.digests.has(tool) === true;
  }

  /** Stops checking the store and waits for writes in progress. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.startup.endAll();
    await this.options.store.close();
  }

  private seenOf(server: string): SeenServer {
    let seen = this.seen.get(server);
    if (seen === undefined) this.seen.set(server, (seen = new SeenServer()));
    return seen;
  }

  /** Logs and counts a mismatch, once per definition seen and pin. */
  private report(server: string, tool: string, pin: ToolPin | undefined, digested: ToolDigest, seen: SeenServer): void {
    const key = `${digested.digest}|${pin?.digest ?? ''}`;
    if (seen.reported.get(tool) === key) return;
    if (seen.reported.size < MAX_PINNED_TOOLS_PER_SERVER || seen.reported.has(tool)) seen.reported.set(tool, key);
    const change: PinMismatch = pin === undefined ? 'added' : 'changed';
    const differences = pin === undefined ? [] : describeDifferences(pinDifferences(pin, digested));
    const hidden = this.options.mode === 'enforce';
    emitWarning(this.options.warn, pin === undefined ? 'a tool with no pin was listed' : 'a tool definition differs from its pin', {
      event: 'tool_pin_mismatch',
      server,
      tool: tool.slice(0, 256),
      change,
      // The definition reviewed is the one accepted: pins accept <server> <tool> --digest <this>.
      digest: shortDigest(digested.digest),
      ...(differences.length > 0 ? { fields: differences } : {}),
      mode: this.options.mode,
      action: hidden ? 'hidden and refused until accepted: mcp-oauth-guard pins accept <server> <tool> --digest <digest>' : 'shown (MCP_AUTH_PINS=warn)',
    });
    try {
      this.options.onMismatch?.(server, change);
    } catch {
      // A metrics hook must never break serving.
    }
  }

  /**
   * Writes pins made on first sight, and logs them. While the store holds none of the pins in force (removed or
   * emptied, see `readAgain`), every pin in force is written with them: written alone, they would be all the store
   * holds, and the next reload would take the others as removed.
   */
  private persist(server: string, made: readonly PinChange[]): void {
    this.generation++;
    writeSafely(this.options.log, formatLogLine('tool_pins_made', { server, tools: made.length, by: 'first-sight', store: this.options.store.name }));
    const changes = this.storeEmptied ? [...this.pinsInForce(server), ...made] : made;
    this.storeEmptied = false;
    this.options.store.write(changes).then(
      async () => {
        // The write changed the version: not a change from elsewhere.
        this.storedVersion = await this.options.store.version();
      },
      (error: unknown) => emitWarning(this.options.warn, 'pins made on first sight could not be written; they hold in this process only', { server, store: this.options.store.name, detail: error instanceof Error ? error.message : 'error' }),
    );
  }

  /** Every pin in force as a change to write, but those of `except` (a server being pinned: its pins are written as made). */
  private pinsInForce(except: string): PinChange[] {
    const changes: PinChange[] = [];
    for (const [server, tools] of this.pins) if (server !== except) for (const [tool, pin] of tools) changes.push({ server, tool, pin });
    return changes;
  }

  private async reloadIfChanged(): Promise<void> {
    try {
      if ((await this.options.store.version()) === this.storedVersion) return;
    } catch {
      return;
    }
    await this.reload('changed');
  }

  private async readAgain(trigger: string): Promise<void> {
    try {
      const version = await this.options.store.version();
      const pins = await this.options.store.load();
      if (pins.size === 0 && this.pins.size > 0) {
        // A store that held pins and now holds none was most likely removed or emptied (a pin file moved away): taking
        // that as "no pins" would pin every tool listed next on first sight, a changed one included. The pins in
        // force stay; the store is read again every interval, and starting from none takes a restart.
        this.storeEmptied = true;
        if (this.unreadable.due(this.options.store.name, EMPTIED) || trigger !== 'changed') {
          emitWarning(this.options.warn, 'pins not reloaded: the store holds no pins now (a pin file removed or emptied?), and the pins in force are kept; put the pin file back, or restart the gateway to start again from none', {
            store: this.options.store.name,
            state: 'emptied',
          });
        }
        return;
      }
      // Servers being pinned on first sight keep what this process pinned but the store does not hold yet.
      for (const server of this.trusting.keys()) if (!pins.has(server) && this.pins.has(server)) pins.set(server, this.pins.get(server)!);
      this.pins = pins;
      this.storeEmptied = false;
      this.storedVersion = version;
      this.generation++;
      const store = this.options.store.name;
      if (this.unreadable.clear(store)) emitWarning(this.options.warn, 'the pins can be read again; those read are in force', { store, state: 'readable' });
      writeSafely(this.options.log, formatLogLine('tool_pins_reloaded', { trigger, store, servers: pins.size, tools: [...pins.values()].reduce((sum, tools) => sum + tools.size, 0) }));
    } catch (error) {
      const detail = error instanceof Error ? error.message : 'error';
      // The periodic re-read says it once a minute while the problem is the same; a reload asked for always says it.
      if (this.unreadable.due(this.options.store.name, detail) || trigger !== 'changed') {
        emitWarning(this.options.warn, 'pins not reloaded: the store could not be read, and the pins in force are kept', { store: this.options.store.name, state: 'unreadable', detail });
      }
    }
  }
}
