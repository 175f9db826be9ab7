import type { AuthInfo } from './auth-info.js';

/**
 * The one definition of an identified caller: the token's issuer, subject and client together, so another
 * user of the same client, or the same subject through another client, is someone else. A token refresh or
 * step-up keeps it. Undefined when the token has neither a (non-empty) subject nor a client id: such tokens
 * all look alike, and binding a session to "nobody" would share it between every one of them.
 *
 * @example
 * callerKey({ ...auth, clientId: '', extra: { ...auth.extra, sub: '' } }); // undefined
 */
export function callerKey(auth: AuthInfo): string | undefined {
  const sub = typeof auth.extra.sub === 'string' && auth.extra.sub !== '' ? auth.extra.sub : undefined;
  const clientId = typeof auth.clientId === 'string' ? auth.clientId : '';
  if (sub === undefined && clientId === '') return undefined;
  const iss = typeof auth.extra.iss === 'string' ? auth.extra.iss : null;
  // JSON keeps the three parts apart whatever characters they contain.
  return JSON.stringify([iss, sub ?? null, clientId]);
}

/**
 * {@link callerKey}, or for a token with neither a subject nor a client id, its issuer alone: such tokens cannot
 * be told apart, so what is kept for them (a rate-limit count, a sealed id's binding) is kept per issuer.
 *
 * @example
 * callerOrIssuerKey({ ...auth, clientId: '', extra: { ...auth.extra, sub: '', iss: 'https://as' } }); // '["https://as",null,null]'
 */
export function callerOrIssuerKey(auth: AuthInfo): string {
  const key = callerKey(auth);
  if (key !== undefined) return key;
  // null as the client (callerKey always has a string there) keeps this apart from every identified caller.
  return JSON.stringify([typeof auth.extra.iss === 'string' ? auth.extra.iss : null, null, null]);
}
