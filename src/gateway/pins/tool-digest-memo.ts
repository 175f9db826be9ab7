/**
 * The digests of tool definitions seen lately, so that a list served again (the same upstream answer, a merged
 * list reused, every page of a busy server) does not canonicalize and hash each unchanged tool again. Keyed by the
 * pinned fields' JSON text, never by object identity: a definition changed in place is a new text, so a memo can
 * never answer with a stale digest. Bounded in entries and in bytes of text, whatever upstreams send.
 */
import { digestTool, PINNED_FIELDS, type ToolDigest } from './tool-digest.js';

/** Most definitions remembered: as many as one server may have pinned. */
export const MAX_MEMO_DEFINITIONS = 10_000;
/** Most text remembered, in UTF-16 code units of JSON summed over entries: about 8 MiB. */
export const MAX_MEMO_TEXT = 4 * 1_048_576;
/** Longest definition text remembered; a larger one is digested each time it is listed. */
const MAX_MEMO_ENTRY_TEXT = 64 * 1_024;

/**
 * A bounded memo of {@link digestTool}: the least recently used definitions are forgotten first.
 *
 * @example
 * const digests = new ToolDigestMemo();
 * digests.of(tool) === digests.of(structuredClone(tool)); // true: digested once
 */
export class ToolDigestMemo {
  private readonly byText = new Map<string, ToolDigest>();
  private text = 0;

  /** @param digest - How a definition is digested. Default {@link digestTool}; tests count its calls. */
  constructor(private readonly digest: (tool: Readonly<Record<string, unknown>>) => ToolDigest = digestTool) {}

  /** The digest of `tool`, from the memo when its pinned fields were digested lately. @throws as {@link digestTool}. */
  of(tool: Readonly<Record<string, unknown>>): ToolDigest {
    const key = pinnedText(tool);
    const known = key === undefined ? undefined : this.byText.get(key);
    if (known !== undefined) {
      // Used again: it moves to the end, the last to be forgotten.
      this.byText.delete(key!);
      this.byText.set(key!, known);
      return known;
    }
    const digested = this.digest(tool);
    if (key !== undefined && key.length <= MAX_MEMO_ENTRY_TEXT) this.remember(key, digested);
    return digested;
  }

  private remember(key: string, digested: ToolDigest): void {
    while (this.byText.size > 0 && (this.byText.size >= MAX_MEMO_DEFINITIONS || this.text + key.length > MAX_MEMO_TEXT)) {
      const oldest = this.byText.keys().next().value as string;
      this.byText.delete(oldest);
      this.text -= oldest.length;
    }
    this.byText.set(key, digested);
    this.text += key.length;
  }
}

/**
 * The pinned fields' JSON text, in {@link PINNED_FIELDS} order: a present field as `[value]`, an absent one as `0`,
 * so that an absent field and one set to `null` never meet. Lists are parsed JSON, so the text is their value
 * exactly: equal texts are equal definitions. Undefined when it cannot be written: then nothing is remembered.
 */
function pinnedText(tool: Readonly<Record<string, unknown>>): string | undefined {
  try {
    return JSON.stringify(PINNED_FIELDS.map((field) => (tool[field] === undefined ? 0 : [tool[field]])));
  } catch {
    return undefined;
  }
}
