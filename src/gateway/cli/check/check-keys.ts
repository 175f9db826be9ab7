import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { fetchJwks } from '../../../core/token/jwks-key-set.js';
import type { CheckResult } from './check-result.js';
import { assessKey } from './jwk-usability.js';

/** Most keys listed one by one; a longer set is summarized. */
const MAX_KEYS_LISTED = 20;

/**
 * Fetches a JWKS as the guard does (one request, bounded by `timeoutMs`) and lists its keys against the allowed
 * algorithms: a set with no key that can verify an allowed algorithm refuses every JWT.
 *
 * @param jwksUri - The configured `MCP_AUTH_JWKS_URI` or the issuer's discovered `jwks_uri`.
 * @param algorithms - The algorithms the guard accepts (`MCP_AUTH_ALGORITHMS`, or its default).
 */
export async function checkSigningKeys(jwksUri: string, algorithms: readonly string[], timeoutMs: number): Promise<CheckResult> {
  const base = { check: 'keys', subject: jwksUri } as const;
  let keys: readonly Readonly<Record<string, unknown>>[];
  try {
    keys = (await fetchJwks(new URL(jwksUri), timeoutMs)).keys as unknown as Readonly<Record<string, unknown>>[];
  } catch (error) {
    return { ...base, status: 'fail', message: `the key set could not be fetched: ${explainFailure(error, 300)}`, fix: 'check that the JWKS URL answers 200 with a JSON Web Key Set (MCP_AUTH_JWKS_URI, or the issuer\'s jwks_uri)' };
  }
  const assessed = keys.map((jwk) => assessKey(jwk, algorithms));
  const usable = assessed.filter((key) => key.algorithms.length > 0);
  const details = assessed.slice(0, MAX_KEYS_LISTED).map((key) => `${key.description}: ${key.algorithms.length > 0 ? `usable for ${key.algorithms.join(', ')}` : `not usable, ${key.reason}`}`);
  if (assessed.length > MAX_KEYS_LISTED) details.push(`… and ${assessed.length - MAX_KEYS_LISTED} more keys`);
  const allowed = `allowed algorithms: ${algorithms.join(', ')}`;
  if (usable.length === 0) {
    return {
      ...base,
      status: 'fail',
      message: keys.length === 0 ? `the key set is empty, so every JWT would be refused (${allowed})` : `no key can verify an allowed algorithm, so every JWT would be refused (${allowed})`,
      details,
      fix: keys.length === 0 ? 'have the authorization server publish its signing keys at this URL' : 'set MCP_AUTH_ALGORITHMS to the algorithm the authorization server signs with, or have it sign with an allowed one',
    };
  }
  return { ...base, status: 'ok', message: `${usable.length} of ${keys.length} ${keys.length === 1 ? 'key' : 'keys'} usable (${allowed})`, details };
}
