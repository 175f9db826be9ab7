import { hash } from 'node:crypto';

/**
 * The key under which anything derived from a token is cached: its SHA-256 digest, base64url (43 characters), so
 * that no cache holds a token and a key's size does not depend on the token's. A collision would need a SHA-256
 * second preimage.
 *
 * @example
 * cache.get(tokenDigest(token));
 */
export function tokenDigest(token: string): string {
  return hash('sha256', token, 'base64url');
}
