/**
 * V8's heap growing factor for a process whose main job is proxying.
 *
 * Why: a gateway reads every upstream answer into buffers of its own (one per socket read, up to 64 KiB), which
 * die at once but count as external memory until the next scavenge: tens of MB in flight at a few hundred MB/s.
 * Node 20's V8 counts that memory against the old generation's allocation limit, which it sets from the live heap
 * times a growing factor it picks from its own speeds. A proxy's old generation barely grows, so V8 picks a factor
 * near 1.1 and leaves about 8 MB above a 15 MB heap: the read buffers in flight fill that, and V8 marks the whole
 * heap every 100 ms or so. Measured on a 1,000-tool `tools/list` through the gateway, that costs a third to a half
 * of its CPU (780–1,000 µs per list against 420–520 µs), and which state a process falls into varies from run to
 * run (see docs/performance.md). A factor of 4 leaves room for those buffers.
 *
 * The cost is memory: the heap may grow to about four times what is live before a full collection (about 75 MB for
 * the gateway's 15 MB). V8 still never sets the limit beyond halfway from the live size to `--max-old-space-size`.
 * The flag replaces every factor V8 would pick: its own maximum is 4 only for heaps allowed 2 GB or more (1.3 to
 * 2.0 below that, as in small containers), and the smaller factors it uses to save memory no longer apply.
 */
import { setFlagsFromString } from 'node:v8';
import { checkInteger } from '../../core/kernel/settings.js';

/**
 * The `--heap-growing-percent` the gateway sets: 300, a growing factor of 4 (the most V8 picks by itself, for heaps
 * allowed 2 GB or more).
 */
export const PROXY_HEAP_GROWING_PERCENT = 300;

/** The largest percent accepted, a factor of 11: far beyond any use, and far below the int V8 reads it as (larger values are misread silently). */
export const MAX_HEAP_GROWING_PERCENT = 1_000;

/** The flag on node's command line, in either spelling (node takes it only as `--heap-growing-percent=N`). */
const FLAG = /^--heap[-_]growing[-_]percent=(.*)$/;

/**
 * Sets V8's heap growing factor for a proxy (`--heap-growing-percent`, {@link PROXY_HEAP_GROWING_PERCENT} by
 * default) unless node was started with a `--heap-growing-percent` of its own, which then stays in force
 * (`--heap-growing-percent=0` restores V8's dynamic factor). Only node's command line is looked at: a factor set
 * earlier with `v8.setFlagsFromString` is replaced. The `mcp-oauth-guard` command calls it before it starts the
 * gateway, with `MCP_AUTH_HEAP_GROWING_PERCENT` (default 300); `startGateway` does not, as it changes the whole
 * process: call it when the gateway is your process's main job.
 *
 * @param execArgv - node's own command-line options; default `process.execArgv`.
 * @param percent - the percent to set, a whole number from 0 (V8's own factor) to 1,000; default
 * {@link PROXY_HEAP_GROWING_PERCENT}.
 * @returns the percent in force: the one set, or the one given to node (`undefined` when node's flag has a value
 * outside 0 to 1,000, which V8 may read differently).
 * @throws ConfigurationError (setting `percent`) when `percent` is not a whole number from 0 to 1,000.
 * @example
 * import { startGateway, loadGatewayConfig, tuneHeapForProxying } from 'mcp-oauth-guard/gateway';
 * tuneHeapForProxying();
 * await startGateway(loadGatewayConfig(process.env));
 */
export function tuneHeapForProxying(execArgv: readonly string[] = process.execArgv, percent: number = PROXY_HEAP_GROWING_PERCENT): number | undefined {
  for (let i = execArgv.length - 1; i >= 0; i -= 1) {
    const match = FLAG.exec(execArgv[i]!);
    if (match === null) continue;
    const given = Number(match[1]);
    return Number.isInteger(given) && given >= 0 && given <= MAX_HEAP_GROWING_PERCENT ? given : undefined;
  }
  checkInteger(percent, 'percent', PROXY_HEAP_GROWING_PERCENT, { min: 0, max: MAX_HEAP_GROWING_PERCENT });
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
