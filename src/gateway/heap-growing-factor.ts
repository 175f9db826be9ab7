/**
 * V8's heap growing factor for a process whose main job is proxying.
 *
 * Why: a gateway reads every upstream answer into buffers of its own (one per socket read, up to 64 KiB), which
 * die at once but count as external memory until the next scavenge: tens of MB in flight at a few hundred MB/s.
 * Node 20's V8 counts that memory against the old generation's allocation limit, which it sets from the live heap
 * times a growing factor it picks from its own speeds. A proxy's old generation barely grows, so V8 picks a factor
 * near 1.1 and leaves about 8 MB above a 15 MB heap: the read buffers in flight fill that, and V8 marks the whole
 * heap every 100 ms or so. Measured on a 1,000-tool `tools/list` through the gateway, that costs about a third of
 * its CPU (800–1,000 µs per list against 420–550 µs), and which state a process falls into varies from run to run
 * (see docs/performance.md). Fixing the factor at V8's own ceiling, 4, leaves room for those buffers.
 *
 * The cost is memory: the heap may grow to about four times what is live before a full collection (about 75 MB for
 * the gateway's 15 MB), still capped by `--max-old-space-size` (V8 never sets the limit beyond halfway to it).
 */
import { setFlagsFromString } from 'node:v8';

/**
 * The `--heap-growing-percent` the gateway sets: 300, a growing factor of 4 (V8's own maximum for its dynamic
 * factor).
 */
export const PROXY_HEAP_GROWING_PERCENT = 300;

/** The flag on node's command line, in either spelling (node takes it only as `--heap-growing-percent=N`). */
const FLAG = /^--heap[-_]growing[-_]percent=(.*)$/;

/**
 * Sets V8's heap growing factor for a proxy (`--heap-growing-percent`, {@link PROXY_HEAP_GROWING_PERCENT} by
 * default) unless node was started with a `--heap-growing-percent` of its own, which then stays in force
 * (`--heap-growing-percent=0` restores V8's dynamic factor). The `mcp-oauth-guard` command calls it before it
 * starts the gateway; `startGateway` does not, as it changes the whole process: call it when the gateway is your
 * process's main job.
 *
 * @param execArgv - node's own command-line options; default `process.execArgv`.
 * @param percent - the percent to set; default {@link PROXY_HEAP_GROWING_PERCENT}.
 * @returns the percent in force: the one set, or the one given to node (`undefined` when node's flag has no
 * readable value).
 * @example
 * import { startGateway, loadGatewayConfig, tuneHeapForProxying } from 'mcp-oauth-guard/gateway';
 * tuneHeapForProxying();
 * await startGateway(loadGatewayConfig());
 */
export function tuneHeapForProxying(execArgv: readonly string[] = process.execArgv, percent: number = PROXY_HEAP_GROWING_PERCENT): number | undefined {
  for (let i = execArgv.length - 1; i >= 0; i -= 1) {
    const match = FLAG.exec(execArgv[i]!);
    if (match === null) continue;
    const given = Number(match[1]);
    return Number.isInteger(given) && given >= 0 ? given : undefined;
  }
  if (!Number.isInteger(percent) || percent < 0) throw new RangeError(`percent must be a whole number of at least 0, not ${percent}`);
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
