/**
 * The last filtering of a list's items, per items array, for reuse while nothing it depended on changed: a handler
 * that answers its lists from one array (most do) has that array filtered once per caller rather than per list.
 */

/** One items array's last filtering: for which key, which objects with which names, and what was kept. */
interface LastFiltering {
  readonly key: string;
  readonly objects: readonly unknown[];
  readonly names: readonly (string | undefined)[];
  readonly kept: readonly unknown[];
}

/**
 * Filtered items kept by the array they came from (held weakly: freed with it), one filtering per array, the
 * last. A kept filtering is reused only for the same key (everything a filtered list depends on besides its items:
 * see `CompiledPolicy.listFilterKey`) and for the same items: the same objects, in the same order, each still with
 * the name (or URI) it had, as a handler may change an array or an item in place.
 *
 * @example
 * const reused = new ReusedListItems();
 * const kept = reused.get(tools, key, nameOf) ?? reused.set(tools, key, nameOf, filter(tools));
 */
export class ReusedListItems {
  readonly #last = new WeakMap<readonly unknown[], LastFiltering>();
  /** Arrays filtered once: kept only when seen again, so a handler that makes a new array per list pays no copy. */
  readonly #seen = new WeakSet<readonly unknown[]>();

  /** A copy of what was kept of `items` under `key`, when they are the same as then; else undefined. */
  get(items: readonly unknown[], key: string, nameOf: (item: unknown) => string | undefined): unknown[] | undefined {
    const last = this.#last.get(items);
    if (last === undefined || last.key !== key || last.objects.length !== items.length) return undefined;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item !== last.objects[i] || nameOf(item) !== last.names[i]) return undefined;
    }
    return last.kept.slice();
  }

  /** Keeps `kept`, what was kept of `items` under `key` (from the second time `items` is filtered), and returns it. */
  set(items: readonly unknown[], key: string, nameOf: (item: unknown) => string | undefined, kept: unknown[]): unknown[] {
    if (!this.#seen.has(items)) {
      this.#seen.add(items);
      return kept;
    }
    this.#last.set(items, { key, objects: items.slice(), names: items.map(nameOf), kept: kept.slice() });
    return kept;
  }
}
