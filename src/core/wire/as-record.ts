/**
 * The one check that a JSON value is an object with members (not `null`, not an array), used wherever a message's
 * `params`, a completion's `ref` or a tool's arguments are read without trusting their shape.
 */

/**
 * `value` as a record of its members when it is a non-null object that is not an array; undefined otherwise.
 *
 * @example
 * asRecord({ name: 'add' })?.name; // 'add'
 * asRecord(['add']); // undefined
 */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
