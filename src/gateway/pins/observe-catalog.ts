/**
 * The gateway's own listing of its upstreams (at start-up, after a reload: the policy check's) compared with the
 * pins as a served list is. Without it, after a restart a changed tool would stay callable until a client listed
 * tools through the gateway: the pins know a tool's pinned digest, not what the upstream serves now.
 */
import type { UpstreamCatalog } from '../upstream/upstream-catalog.js';
import type { ToolPins } from './tool-pins.js';

/**
 * Compares a listing's tools (kept whole: `keepToolDefinitions`) with the pins of `server`: a changed one is then
 * refused (in `enforce`) and logged, and a server with no pins is pinned on first sight, exactly as by a served
 * `tools/list`. A listing that kept no definitions changes nothing.
 *
 * @param selects - Which tools the endpoint exposes (a server's `tools` selection); the others are never compared.
 * @example
 * const report = await reportPolicyCoverage({ ...options, limits: { keepToolDefinitions: true } });
 * if ('catalog' in report) observeCatalog(pins, 'upstream', report.catalog);
 */
export function observeCatalog(pins: ToolPins, server: string, catalog: UpstreamCatalog, selects: (tool: string) => boolean = () => true): void {
  const tools = catalog.toolDefinitions;
  if (tools === undefined) return;
  pins.observe(server, tools.filter((tool) => selects(String(tool.name))), !catalog.truncated.includes('tools/list'));
}
