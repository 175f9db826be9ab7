/**
 * Reading an upstream's `WWW-Authenticate` refusal: whether it is a Bearer `insufficient_scope` challenge (RFC 6750
 * §3.1) and which scope it names, so that credentials the user holds can ask for more (a step-up).
 */

/** Longest challenge read, in characters; a longer header is not read as one. */
const MAX_CHALLENGE_CHARS = 4_096;

/**
 * The `insufficient_scope` challenge in `header`, with its `scope` auth-param (undefined when it names none), or
 * undefined when the header holds no such challenge.
 *
 * @example
 * insufficientScopeChallenge('Bearer error="insufficient_scope", scope="notes:write"'); // { scope: 'notes:write' }
 * insufficientScopeChallenge('Bearer error="invalid_token"'); // undefined
 */
export function insufficientScopeChallenge(header: string | string[] | undefined): { readonly scope: string | undefined } | undefined {
  const text = Array.isArray(header) ? header.join(', ') : header;
  if (text === undefined || text.length > MAX_CHALLENGE_CHARS) return undefined;
  const error = challengeParameter(text, 'error');
  if (error !== 'insufficient_scope' || !/^\s*(?:Bearer|DPoP)\b/i.test(text)) return undefined;
  const scope = challengeParameter(text, 'scope')?.trim();
  return { scope: scope === '' ? undefined : scope };
}

/**
 * An auth-param's value in a `WWW-Authenticate` header (quoted, unescaped, or a token; RFC 9110 §11.2), or
 * undefined when absent or the header is longer than 4 096 characters.
 *
 * @example
 * challengeParameter('Bearer resource_metadata="https://a.example/m", scope="x y"', 'scope'); // 'x y'
 */
export function challengeParameter(header: string | null | undefined, name: string): string | undefined {
  if (header === null || header === undefined || header.length > MAX_CHALLENGE_CHARS) return undefined;
  const match = new RegExp(`(?:^|[\\s,])${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^\\s,]+))`, 'i').exec(header);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2];
}
