import { canonicalizeResourceUri } from '../../../core/kernel/canonical-resource.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { listServerTools, PER_CALLER_REASONS, type ListedServerTools } from '../../pins/list-server-tools.js';
import { openPinStore } from '../../pins/open-pin-store.js';
import { describeDifferences, pinDifferences } from '../../pins/pin-diff.js';
import { compareListing, unlistedPins } from '../../pins/compare-listing.js';
import type { PinSet } from '../../pins/pin-document.js';
import { shortDigest } from '../../pins/tool-digest.js';
import type { CheckResult } from './check-result.js';

/** Most difference lines shown per server. */
const MAX_DETAIL_LINES = 20;

/**
 * With pins (`MCP_AUTH_PIN_FILE`): reads them, lists every upstream as the gateway itself (an upstream that takes
 * only tokens exchanged for each caller, as the caller whose token `callerToken` is: `check --token-file`; one of
 * connected accounts never, said in its line), and reports per server
 * what differs from the pins, field by field (`add: description changed`, `add: inputSchema changed: property "x"
 * added`), tools with no pin, and pins of tools no longer listed. Never the text of a definition. No lines without
 * a pin file.
 */
export async function checkPins(config: GatewayConfig, resource: string, timeoutMs: number, callerToken?: string): Promise<CheckResult[]> {
  const settings = config.pins;
  if (settings === undefined) return [];
  let pins: PinSet;
  try {
    const store = await openPinStore(settings, config.redis, canonicalizeResourceUri(resource, 'MCP_AUTH_RESOURCE'));
    try {
      pins = await store.load();
    } finally {
      await store.close();
    }
  } catch (error) {
    const message = error instanceof ConfigurationError ? error.message : explainFailure(error, 300);
    return [{ check: 'pins', status: 'fail', message: `the pins could not be read: ${message}`, fix: 'fix or move the pin file away, then run mcp-oauth-guard pins update' }];
  }
  const listed = await listServerTools(config, timeoutMs, undefined, callerToken);
  return listed.map((server) => pinsLine(server, pins, settings.mode));
}

/** One server's line: its tools compared with its pins. */
function pinsLine(listed: ListedServerTools, pins: PinSet, mode: string): CheckResult {
  const base = { check: 'pins', subject: listed.server } as const;
  if (listed.perCaller !== undefined) {
    const { reason, next } = PER_CALLER_REASONS[listed.perCaller];
    return { ...base, status: 'skip', message: `not compared with the pins: ${reason}`, fix: next };
  }
  if (listed.tools === undefined) return { ...base, status: 'skip', message: `not compared with the pins: ${listed.error ?? 'not listed'}` };
  const pinned = pins.get(listed.server);
  if (pinned === undefined || pinned.size === 0) {
    return { ...base, status: 'ok', message: `no pins yet: ${listed.tools.length} tools will be pinned on first sight (or run mcp-oauth-guard pins update)` };
  }
  const lines: string[] = [];
  const names = new Set<string>();
  for (const tool of compareListing(pinned, listed.tools)) {
    const { name } = tool;
    if (name === undefined) {
      lines.push(`${JSON.stringify(String((tool.item as { name?: unknown }).name).slice(0, 64))}: a name that cannot be pinned (not a string, empty or over 256 characters); hidden with MCP_AUTH_PINS=enforce`);
      continue;
    }
    names.add(name);
    const { pin, digested } = tool;
    // The short digest is what pins accept --digest takes: the definition reviewed is the one accepted.
    if (pin === undefined) lines.push(`${name}: new, not pinned (${shortDigest(digested.digest)})`);
    else for (const line of describeDifferences(pinDifferences(pin, digested))) lines.push(`${name}: ${line} (now ${shortDigest(digested.digest)})`);
  }
  for (const name of unlistedPins(pinned, names, listed.truncated === true)) lines.push(`${name}: pinned, no longer listed`);
  if (lines.length === 0) return { ...base, status: 'ok', message: `all ${listed.tools.length} tools as pinned` };
  const shown = lines.length > MAX_DETAIL_LINES ? [...lines.slice(0, MAX_DETAIL_LINES), `and ${lines.length - MAX_DETAIL_LINES} more`] : lines;
  // What the differences mean for the gateway: hidden and refused now, or (warn, or pins off) only once enforced.
  const meaning = mode === 'enforce' ? '; with MCP_AUTH_PINS=enforce, changed and new tools are hidden and refused' : `; served now (MCP_AUTH_PINS=${mode}); with enforce, changed and new tools would be hidden and refused`;
  return {
    ...base,
    status: 'warn',
    message: `${lines.length} difference${lines.length === 1 ? '' : 's'} from the pins${meaning}`,
    details: shown,
    fix: 'review each change at the server, then accept it: mcp-oauth-guard pins accept <server> <tool> --digest <digest shown> (or pins update for all)',
  };
}
