/**
 * The comparison of a listing with a server's pins, one tool at a time: the one rule the gateway (on every list it
 * serves), `pins update` and `check` apply. A tool whose name can never be pinned is its own case; every other tool
 * is as pinned, `changed` (its definition differs from its pin) or `added` (it has no pin).
 */
import { pinnableToolName, type ToolPin } from './pin-document.js';
import { digestTool, type ToolDigest } from './tool-digest.js';

/** One listed tool compared with its pin. */
export type ListedToolComparison =
  /** A name that is not a string, is empty or is over 256 characters: it can never be pinned, nor accepted. */
  | { readonly item: unknown; readonly name: undefined }
  | {
      readonly item: unknown;
      readonly name: string;
      readonly digested: ToolDigest;
      /** Its pin when the listing was compared, if any. */
      readonly pin: ToolPin | undefined;
      /** How it differs from its pin; absent when it is as pinned. */
      readonly change?: 'changed' | 'added';
    };

/**
 * Compares each tool of `tools` with its pin in `pinned`, lazily: a pin the caller sets while it goes through the
 * listing (a first-sight pin) is the one the next tool of that name meets.
 *
 * @param digest - How a definition is digested (the gateway's memo of digests). Default `digestTool`.
 * @example
 * for (const tool of compareListing(pins.get('notes'), listed)) if (tool.name && tool.change) console.log(tool.name, tool.change);
 */
export function* compareListing(
  pinned: ReadonlyMap<string, ToolPin> | undefined,
  tools: readonly unknown[],
  digest: (tool: Readonly<Record<string, unknown>>) => ToolDigest = digestTool,
): Generator<ListedToolComparison> {
  for (const item of tools) {
    const name = pinnableToolName(item);
    if (name === undefined) {
      yield { item, name };
      continue;
    }
    const digested = digest(item as Record<string, unknown>);
    const pin = pinned?.get(name);
    const change = pin === undefined ? 'added' : pin.digest === digested.digest ? undefined : 'changed';
    yield { item, name, digested, pin, ...(change ? { change } : {}) };
  }
}

/**
 * The pinned tools a whole listing no longer has. A listing cut short by a bound has none: the tools it did not
 * reach may still be there.
 *
 * @example
 * unlistedPins(pins.get('notes'), new Set(['add']), false); // ['remove']
 */
export function unlistedPins(pinned: ReadonlyMap<string, ToolPin> | undefined, listed: ReadonlySet<string>, truncated: boolean): string[] {
  if (pinned === undefined || truncated) return [];
  return [...pinned.keys()].filter((name) => !listed.has(name));
}
