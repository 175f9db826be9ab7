/**
 * JSON Pointers (RFC 6901), for naming the parts of a tool call's arguments that an audit record must never show.
 */
import { ConfigurationError } from '../kernel/errors.js';

/**
 * A pointer's reference tokens, unescaped (`~1` is `/`, `~0` is `~`; RFC 6901 §4). The empty pointer (`""`, the
 * whole document) has none.
 */
export type JsonPointer = readonly string[];

/**
 * Parses a JSON Pointer (RFC 6901 §3): `""` or `/`-separated reference tokens, each with `~0` and `~1` as the only
 * escapes.
 *
 * @example
 * parseJsonPointer('/card/number'); // ['card', 'number']
 * parseJsonPointer('/a~1b');        // ['a/b']
 * @throws ConfigurationError naming `setting` for text that is not a pointer (no leading `/`, a bad `~` escape).
 */
export function parseJsonPointer(text: string, setting: string): JsonPointer {
  if (text === '') return [];
  if (!text.startsWith('/')) throw new ConfigurationError(setting, `"${text}" is not a JSON Pointer (RFC 6901): it must start with "/", e.g. /password`);
  if (/~(?![01])/.test(text)) throw new ConfigurationError(setting, `"${text}" is not a JSON Pointer (RFC 6901): "~" must be followed by 0 or 1`);
  return text
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** What stands in an audit record for a value a pointer named. */
export const REDACTED_MARKER = '[redacted]';

/**
 * `value` (JSON data: a tool call's arguments) with the value at each pointer replaced by {@link REDACTED_MARKER}; the
 * input is never changed, only the objects and arrays on a redacted path are copied. A pointer that names nothing
 * changes nothing; the empty pointer redacts the whole value. An array index is a token of decimal digits
 * (RFC 6901 §4).
 *
 * @example
 * redactJsonPointers({ user: 'ana', card: { number: '4111…', exp: '12/30' } }, [['card', 'number']]);
 * // { user: 'ana', card: { number: '[redacted]', exp: '12/30' } }
 */
export function redactJsonPointers(value: unknown, pointers: readonly JsonPointer[]): unknown {
  let result = value;
  for (const pointer of pointers) result = redactAt(result, pointer, 0);
  return result;
}

function redactAt(value: unknown, pointer: JsonPointer, depth: number): unknown {
  if (depth === pointer.length) return REDACTED_MARKER;
  if (typeof value !== 'object' || value === null) return value;
  const token = pointer[depth]!;
  if (Array.isArray(value)) {
    if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= value.length) return value;
    const copy = [...value];
    copy[Number(token)] = redactAt(value[Number(token)], pointer, depth + 1);
    return copy;
  }
  if (!Object.hasOwn(value, token)) return value;
  return { ...(value as Record<string, unknown>), [token]: redactAt((value as Record<string, unknown>)[token], pointer, depth + 1) };
}
