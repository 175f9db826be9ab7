/**
 * The names under which an endpoint serving several MCP servers exposes their tools and prompts:
 * `<server>__<name>`. Server names never contain `__` (nor end with `_`), so the first `__` of an exposed name
 * always ends the server's name: tool `a__b` of server `x` is `x__a__b`, and reads back as `x` and `a__b`.
 */

/** What joins a server's name and its own tool or prompt name in an exposed name. */
export const EXPOSED_NAME_SEPARATOR = '__';

/** A tool or prompt name as exposed, taken apart: the server that owns it and its name there. */
export interface ExposedName {
  /** The server's name (never empty, never containing `__`). */
  readonly server: string;
  /** The tool or prompt name as the server itself knows it (never empty; may contain `__`). */
  readonly name: string;
}

/**
 * The name under which `server`'s tool or prompt `name` is exposed: `<server>__<name>`. `server` must be a valid
 * server name (no `__`, and not ending with `_`, which would make the first `__` fall inside the separator's
 * neighbour); the configuration reader checks server names once, so this does not.
 *
 * @example
 * exposeName('notes', 'add'); // 'notes__add'
 * exposeName('x', 'a__b'); // 'x__a__b'
 */
export function exposeName(server: string, name: string): string {
  return server + EXPOSED_NAME_SEPARATOR + name;
}

/**
 * The server and local name of an exposed tool or prompt name, split at the first `__`; undefined when there is
 * no `__`, or when either side would be empty (no server exposes such a name).
 *
 * @example
 * splitExposedName('notes__add'); // { server: 'notes', name: 'add' }
 * splitExposedName('x__a__b'); // { server: 'x', name: 'a__b' }
 * splitExposedName('add'); // undefined
 * splitExposedName('__add'); // undefined
 */
export function splitExposedName(exposed: string): ExposedName | undefined {
  const at = exposedNameSplit(exposed);
  return at === -1 ? undefined : { server: exposed.slice(0, at), name: exposed.slice(at + EXPOSED_NAME_SEPARATOR.length) };
}

/**
 * Where {@link splitExposedName} splits `exposed`: the index of its first `__`, or -1 when it is no exposed name.
 * For code splitting many names, which can then take the two parts it needs without the object.
 */
export function exposedNameSplit(exposed: string): number {
  const at = exposed.indexOf(EXPOSED_NAME_SEPARATOR);
  return at <= 0 || at + EXPOSED_NAME_SEPARATOR.length >= exposed.length ? -1 : at;
}
