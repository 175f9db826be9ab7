// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/**
 * Whether `value` is a valid OAuth scope token (RFC 6749 §3.3: `1*( %x21 / %x23-5B / %x5D-7E )`, i.e.
 * printable ASCII without space, `"` or `\`). The one test of a scope's spelling: the policy's scopes, the
 * scopes read from a token, and the scopes the gateway tells its upstream all go through it.
 *
 * @example
 * isScopeToken('calc:use'); // true
 * isScopeToken('calc use'); // false: two scopes
 */
export function isScopeToken(value: unknown): value is string {
  return typeof value === 'string' && SCOPE_TOKEN.test(value);
}

/**
 * The scope tokens of a space-separated `scope` value (RFC 6749 §3.3), in order, anything that is not one
 * ({@link isScopeToken}) left out; `[]` for undefined.
 *
 * @example
 * scopeTokens('notes:read  notes:write bad"one'); // ['notes:read', 'notes:write']
 */
export function scopeTokens(scope: string | undefined): string[] {
  return scope === undefined ? [] : scope.split(' ').filter(isScopeToken);
}
