/** What separates a server's name from its own tool or prompt name in the name an endpoint with several servers exposes. */
export const EXPOSED_NAME_SEPARATOR = '__';

/** The name a server's tool or prompt is exposed under: `<server>__<name>`. */
export function exposeName(server: string, name: string): string {
  return `${server}${EXPOSED_NAME_SEPARATOR}${name}`;
}

/** The server and its own name, split at the first separator; undefined when either side is empty or there is none. */
export function splitExposedName(exposed: string): { server: string; name: string } | undefined {
  const at = exposed.indexOf(EXPOSED_NAME_SEPARATOR);
  if (at <= 0 || at + EXPOSED_NAME_SEPARATOR.length >= exposed.length) return undefined;
  return { server: exposed.slice(0, at), name: exposed.slice(at + EXPOSED_NAME_SEPARATOR.length) };
}
