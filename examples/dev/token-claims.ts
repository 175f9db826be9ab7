/**
 * Extra claims in the development server's access tokens (`npm run auth-server -- --claim name=value`), to try
 * policy conditions on claims such as `groups` or `tenant`. The claims the server sets itself are refused.
 */

/**
 * Claims the server sets itself and never takes from the command line: the issuer, audience, times and id (RFC
 * 9068 §2.2), the subject, client and scope the guard decides on, and `cnf`, the DPoP key binding (RFC 9449 §6).
 */
export const RESERVED_TOKEN_CLAIMS: readonly string[] = ['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub', 'client_id', 'scope', 'cnf'];

/**
 * One `--claim name=value`: the value as JSON when it parses as JSON (`["finance"]`, `3`, `true`, `{"a":1}`), else
 * as the text given (`acme`). Returns the claim, or the problem with it, naming the flag.
 *
 * @example
 * parseClaimFlag('groups=["finance"]'); // ['groups', ['finance']]
 * parseClaimFlag('tenant=acme'); // ['tenant', 'acme']
 * parseClaimFlag('sub=alice'); // '--claim: "sub" is set by the server …'
 */
export function parseClaimFlag(text: string): [name: string, value: unknown] | string {
  const eq = text.indexOf('=');
  const name = eq === -1 ? text : text.slice(0, eq);
  if (eq <= 0 || !/^[\w.:-]+$/.test(name)) return `--claim must be name=value (a name of letters, digits and _.:-), got "${text.slice(0, 40)}"`;
  const reserved = reservedClaimProblem(name);
  if (reserved !== undefined) return `--claim: ${reserved}`;
  const raw = text.slice(eq + 1);
  try {
    return [name, JSON.parse(raw) as unknown];
  } catch {
    return [name, raw];
  }
}

/**
 * Refuses claims the server sets itself, for the server's `extraClaims` option.
 *
 * @throws TypeError naming the first reserved claim.
 */
export function checkExtraClaims(claims: Readonly<Record<string, unknown>>): void {
  for (const name of Object.keys(claims)) {
    const problem = reservedClaimProblem(name);
    if (problem !== undefined) throw new TypeError(`extraClaims: ${problem}`);
  }
}

function reservedClaimProblem(name: string): string | undefined {
  return RESERVED_TOKEN_CLAIMS.includes(name) ? `"${name}" is set by the server and cannot be given (reserved: ${RESERVED_TOKEN_CLAIMS.join(', ')})` : undefined;
}
