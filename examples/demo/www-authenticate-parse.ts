/**
 * A client-side parser for `WWW-Authenticate` (RFC 9110 section 11.6.1), enough to read an MCP server's
 * `Bearer resource_metadata="…", scope="…"` challenge (RFC 6750 section 3, RFC 9728 section 5.1).
 *
 * @module
 */

/** One challenge of a `WWW-Authenticate` header. */
export interface AuthChallenge {
  /** Auth scheme as sent; compare it case-insensitively. */
  scheme: string;
  /** Auth parameters, names lowercased (they are case-insensitive), values unquoted and unescaped. */
  params: Record<string, string>;
  /** The token68 form (`Basic abc==`), when the challenge used it instead of parameters. */
  token68?: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*/;

/**
 * Splits a `WWW-Authenticate` value into its challenges. Several challenges may share one header and
 * parameters may be quoted strings containing commas, so a plain split on commas is not enough. Malformed
 * tails are skipped rather than thrown on: a client should use what it can read.
 */
export function parseWwwAuthenticate(header: string): AuthChallenge[] {
  const challenges: AuthChallenge[] = [];
  let rest = header;
  let current: AuthChallenge | undefined;

  const skipSpaces = () => {
    rest = rest.replace(/^[ \t]+/, '');
  };

  while (rest.length) {
    skipSpaces();
    if (rest.startsWith(',')) {
      rest = rest.slice(1);
      continue;
    }
    const name = TOKEN.exec(rest)?.[0];
    if (!name) {
      // Unreadable character: drop up to the next comma and carry on.
      const comma = rest.indexOf(',');
      rest = comma === -1 ? '' : rest.slice(comma + 1);
      continue;
    }
    const afterName = rest.slice(name.length);
    const equalsAhead = /^[ \t]*=(?!=*[ \t]*(,|$))/.test(afterName);

    if (current && equalsAhead) {
      // `name = value`: a parameter of the current challenge.
      rest = afterName.replace(/^[ \t]*=[ \t]*/, '');
      let value: string;
      if (rest.startsWith('"')) {
        value = '';
        let i = 1;
        for (; i < rest.length && rest[i] !== '"'; i++) {
          if (rest[i] === '\\' && i + 1 < rest.length) i++;
          value += rest[i];
        }
        rest = rest.slice(i + 1);
      } else {
        // Strictly a token, but servers send unquoted values such as `scope=notes:write` (':' is not a
        // token character); reading up to the next comma or space accepts them.
        value = /^[^\s,]*/.exec(rest)?.[0] ?? '';
        rest = rest.slice(value.length);
      }
      current.params[name.toLowerCase()] = value;
      continue;
    }

    // Otherwise `name` starts a new challenge, optionally followed by a token68.
    current = { scheme: name, params: {} };
    challenges.push(current);
    rest = afterName;
    const hadSpace = /^[ \t]+/.test(rest);
    skipSpaces();
    if (hadSpace) {
      const token68 = TOKEN68.exec(rest)?.[0];
      // `realm="x"` also starts like a token68 (`realm=`), but a token68 is the whole challenge body.
      if (token68 && /^[ \t]*(,|$)/.test(rest.slice(token68.length))) {
        current.token68 = token68;
        rest = rest.slice(token68.length);
      }
    }
  }
  return challenges;
}

/** The first `Bearer` challenge of a response's `WWW-Authenticate` header(s), if any. */
export function findBearerChallenge(header: string | null | undefined): AuthChallenge | undefined {
  return findChallenge(header, 'Bearer');
}

/** The first challenge of `scheme` (`Bearer`, `DPoP`, compared case-insensitively), if any. */
export function findChallenge(header: string | null | undefined, scheme: string): AuthChallenge | undefined {
  if (!header) return undefined;
  const wanted = scheme.toLowerCase();
  return parseWwwAuthenticate(header).find((challenge) => challenge.scheme.toLowerCase() === wanted);
}
