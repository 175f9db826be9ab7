/**
 * Matching resource URIs against the RFC 6570 URI templates used as policy keys
 * (MCP `server/resources`: resource templates are RFC 6570 templates).
 */

/** A template compiled once into a matcher. */
export interface UriTemplateMatcher {
  /** The template as written. */
  readonly template: string;
  /** Number of characters before the first expression: the specificity used to rank templates. */
  readonly literalPrefixLength: number;
  /** Number of literal (non-expression) characters in the whole template: the tie-breaker. */
  readonly literalLength: number;
  /** Whether `uri` could be an expansion of the template. */
  matches(uri: string): boolean;
}

// Each operator (RFC 6570 §2.2) maps to what its expansion can look like. Matching is deliberately
// permissive inside an expression (any value may be empty, list and exploded forms are allowed), because a
// template key is meant to catch every URI its server could produce from it.
const OPERATOR_PATTERNS: ReadonlyMap<string, string> = new Map([
  // Simple string expansion percent-encodes reserved characters, so the value never contains `/`.
  ['', '[^/]*'],
  // Reserved expansion keeps reserved characters: anything, `/` included.
  ['+', '[^]*'],
  // Fragment expansion: `#` then anything, or nothing when the variable is undefined.
  ['#', '(?:#[^]*)?'],
  // Label, path-segment, path-parameter, query and query-continuation expansions (level 3).
  ['.', '(?:\\.[^/?#]*)?'],
  ['/', '(?:/[^/?#]*)*'],
  [';', '(?:;[^/?#]*)*'],
  ['?', '(?:\\?[^#]*)?'],
  ['&', '(?:&[^#]*)?'],
]);

// varname (RFC 6570 §2.3) with an optional level-4 modifier (`:max-length` or `*`).
const VARSPEC = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?$/;

/**
 * Compiles an RFC 6570 template (levels 1–3, level-4 modifiers tolerated) into a matcher.
 *
 * - `{var}` matches any run of characters without `/`, including an empty one.
 * - `{+var}` matches anything (reserved expansion, §3.2.3).
 * - `{#var}` matches an optional `#` followed by anything (fragment expansion, §3.2.4).
 * - `{.var}`, `{/var}`, `{;var}`, `{?var}`, `{&var}` match their prefixed forms, or nothing.
 *
 * The URI scheme is compared case-insensitively (RFC 3986 §3.1); everything else is compared as sent,
 * without percent-decoding, since that is how MCP servers receive `params.uri`.
 *
 * @throws SyntaxError when the template is malformed (unclosed `{`, stray `}`, empty or invalid variable,
 *   reserved operator `=,!@|`). `compilePolicy` turns it into a `ConfigurationError` naming the key.
 */
export function compileUriTemplate(template: string): UriTemplateMatcher {
  const normalized = lowercaseScheme(template);
  let source = '^';
  let literalPrefixLength = -1;
  let literalLength = 0;
  let i = 0;
  while (i < normalized.length) {
    const open = normalized.indexOf('{', i);
    const literalEnd = open === -1 ? normalized.length : open;
    const literal = normalized.slice(i, literalEnd);
    if (literal.includes('}')) throw new SyntaxError(`unmatched "}" in URI template ${JSON.stringify(template)}`);
    source += escapeRegExp(literal);
    literalLength += literal.length;
    if (open === -1) break;
    if (literalPrefixLength === -1) literalPrefixLength = open;
    const close = normalized.indexOf('}', open + 1);
    if (close === -1) throw new SyntaxError(`unclosed "{" in URI template ${JSON.stringify(template)}`);
    source += expressionPattern(normalized.slice(open + 1, close), template);
    i = close + 1;
  }
  if (literalPrefixLength === -1) literalPrefixLength = normalized.length;
  const pattern = new RegExp(`${source}$`);
  return {
    template,
    literalPrefixLength,
    literalLength,
    matches(uri: string): boolean {
      return pattern.test(lowercaseScheme(uri));
    },
  };
}

/** Whether a policy key is an RFC 6570 template (contains an expression) rather than an exact URI. */
export function isUriTemplate(key: string): boolean {
  return key.includes('{');
}

/**
 * A lookup from a resource URI to the value of the best matching policy key.
 */
export interface UriLookup<T> {
  /**
   * The value for `uri`: the exact key first, then the most specific template (longest literal prefix, then
   * most literal characters, then the one declared first), then the `*` key. `undefined` when none applies.
   * A template string (from `resources/templates/list`) can be looked up the same way: an identical key
   * matches exactly, otherwise it is matched like a URI (its `{…}` parts are ordinary characters then).
   */
  find(uri: string): T | undefined;
  /** The `*` value, if any. */
  readonly wildcard: T | undefined;
}

/**
 * Builds a {@link UriLookup} from policy entries (`[key, value]`, in declaration order). Keys containing
 * `{` are compiled as templates once, here; `*` is the default; everything else is an exact URI.
 *
 * @throws SyntaxError from {@link compileUriTemplate} for a malformed template key.
 */
export function compileUriLookup<T>(entries: Iterable<readonly [string, T]>): UriLookup<T> {
  const exact = new Map<string, T>();
  const templateKeys = new Map<string, T>();
  const templates: { matcher: UriTemplateMatcher; value: T; order: number }[] = [];
  let wildcard: T | undefined;
  let order = 0;
  for (const [key, value] of entries) {
    if (key === '*') wildcard = value;
    else if (isUriTemplate(key)) {
      compileUriTemplate(key); // reports a malformed key as written
      if (!templateKeys.has(key)) templateKeys.set(key, value);
      templates.push({ matcher: compileUriTemplate(resolveResourceTemplate(key) ?? key), value, order: order++ });
    } else exact.set(resolveResourceUri(key) ?? lowercaseScheme(key), value);
  }
  templates.sort(
    (a, b) =>
      b.matcher.literalPrefixLength - a.matcher.literalPrefixLength ||
      b.matcher.literalLength - a.matcher.literalLength ||
      a.order - b.order,
  );
  return {
    wildcard,
    find(uri: string): T | undefined {
      // A template string from resources/templates/list that is itself a policy key.
      const template = templateKeys.size === 0 ? undefined : templateKeys.get(uri);
      if (template !== undefined) return template;
      // Look up the URI in its resolved form, so that no other spelling of a protected resource (" x", dot
      // segments, default port, host case, percent-encoding) can select a weaker rule than the resource the
      // server will actually read. Requests must also send that form (checkRequestTarget).
      const key = resolveResourceUri(uri) ?? lowercaseScheme(uri);
      const hit = exact.size === 0 ? undefined : exact.get(key);
      if (hit !== undefined) return hit;
      for (const t of templates) if (t.matcher.matches(key)) return t.value;
      return wildcard;
    },
  };
}

function expressionPattern(expression: string, template: string): string {
  const first = expression.charAt(0);
  const operator = OPERATOR_PATTERNS.has(first) && first !== '' ? first : '';
  const varList = operator === '' ? expression : expression.slice(1);
  if (varList === '' || varList.split(',').some((v) => !VARSPEC.test(v))) {
    throw new SyntaxError(
      `invalid expression {${expression}} in URI template ${JSON.stringify(template)}: ` +
        'expected {name}, {+name}, {#name}, {.name}, {/name}, {;name}, {?name} or {&name}',
    );
  }
  return OPERATOR_PATTERNS.get(operator) as string;
}

// RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), case-insensitive.
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function lowercaseScheme(uri: string): string {
  const m = SCHEME.exec(uri);
  if (m === null) return uri;
  const scheme = m[0];
  const lower = scheme.toLowerCase();
  return lower === scheme ? uri : lower + uri.slice(scheme.length);
}

/** `text` as a regular expression source matching exactly `text` (every character special to `RegExp` escaped). */
export function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

/**
 * The resolved form of a resource URI: the one spelling the policy decides on, and the one a request must send
 * (see `checkRequestTarget`). `undefined` when it does not parse as an absolute URL.
 *
 * 1. `new URL(uri).href`, as the MCP SDKs resolve a URI before reading a resource (WHATWG URL serialization):
 *    leading and trailing spaces and control characters and embedded tabs and newlines removed, dot segments
 *    (`%2e` ones included) resolved, a default port dropped, the scheme and a special scheme's host lower-cased,
 *    characters a URL cannot carry raw (spaces, non-ASCII) percent-encoded.
 * 2. Percent-encoding normalized (RFC 3986 §6.2.2.1, §6.2.2.2): hexadecimal digits upper-cased, escapes of
 *    unreserved characters (`%70` for `p`) decoded, as every server that percent-decodes reads them alike.
 *    The result is parsed once more, since a decoded `.` may complete a dot segment.
 *
 * The host of a non-special scheme (`notes://Alice/x`) keeps its case, as WHATWG URL and the SDKs keep it.
 *
 * @example
 * resolveResourceUri('DOCS://private/./%70lan'); // 'docs://private/plan'
 * resolveResourceUri('https://Example.com:443');  // 'https://example.com/'
 */
export function resolveResourceUri(uri: string): string | undefined {
  const href = parseHref(uri);
  if (href === undefined) return undefined;
  if (!href.includes('%')) return href;
  const escapesNormalized = normalizePercentEncoding(href);
  return escapesNormalized === href ? href : parseHref(escapesNormalized);
}

function parseHref(uri: string): string | undefined {
  try {
    return new URL(uri).href;
  } catch {
    return undefined;
  }
}

// RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~".
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

function normalizePercentEncoding(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

const PLACEHOLDER = /mcpguardvar(\d+)x/g;

/**
 * A URI template with its literal parts in resolved form ({@link resolveResourceUri}: scheme and host
 * lower-cased, non-ASCII percent-encoded, default port and dot segments resolved, escapes normalized) and its
 * expressions kept as written, so that it matches the resolved URIs it is compared with. `undefined` when the
 * template does not parse as an absolute URL, or when resolution would change its structure (an expression
 * dropped by a dot segment, say).
 *
 * @example
 * resolveResourceTemplate('DOCS://x/./{id}'); // 'docs://x/{id}'
 */
export function resolveResourceTemplate(template: string): string | undefined {
  const expressions: string[] = [];
  const withPlaceholders = template.replace(/\{[^}]*\}/g, (expression) => `mcpguardvar${expressions.push(expression) - 1}x`);
  const resolved = resolveResourceUri(withPlaceholders);
  if (resolved === undefined) return undefined;
  let restored = 0;
  const result = resolved.replace(PLACEHOLDER, (_match, index: string) => {
    restored++;
    return expressions[Number(index)] ?? '';
  });
  return restored === expressions.length ? result : undefined;
}

/** Capturing patterns of templates, by template: the templates are policy keys, so few and fixed. */
const capturePatterns = new Map<string, { pattern: RegExp; names: string[] } | null>();
const MAX_CAPTURE_PATTERNS = 1000;

/**
 * The values `uri` gives the variables of `template` (RFC 6570), percent-decoded, or undefined when it does not
 * match. Only simple (`{var}`) and reserved (`{+var}`) expressions of one variable capture; other expressions
 * match as {@link compileUriTemplate} says and capture nothing. The scheme is compared case-insensitively.
 *
 * @example
 * captureUriTemplate('crm://{tenant}/accounts/{id}', 'crm://acme/accounts/7'); // { tenant: 'acme', id: '7' }
 */
export function captureUriTemplate(template: string, uri: string): Record<string, string> | undefined {
  let compiled = capturePatterns.get(template);
  if (compiled === undefined) {
    compiled = compileCapture(template);
    if (capturePatterns.size >= MAX_CAPTURE_PATTERNS) capturePatterns.clear();
    capturePatterns.set(template, compiled);
  }
  if (compiled === null) return undefined;
  const match = compiled.pattern.exec(lowercaseScheme(uri));
  if (match === null) return undefined;
  const values: Record<string, string> = Object.create(null);
  compiled.names.forEach((name, i) => {
    const raw = match[i + 1] ?? '';
    try {
      values[name] = decodeURIComponent(raw);
    } catch {
      values[name] = raw;
    }
  });
  return values;
}

function compileCapture(template: string): { pattern: RegExp; names: string[] } | null {
  try {
    compileUriTemplate(template);
  } catch {
    return null;
  }
  const normalized = lowercaseScheme(template);
  const names: string[] = [];
  const source = normalized.replace(/\{([^}]*)\}|[^{]+/g, (part: string, expression: string | undefined) => {
    if (expression === undefined) return escapeRegExp(part);
    const operator = expression.charAt(0);
    const single = !expression.includes(',');
    if (single && /^[A-Za-z0-9_%]/.test(operator)) {
      names.push(expression.replace(/[:*].*$/, ''));
      return '([^/]*)';
    }
    if (single && operator === '+') {
      names.push(expression.slice(1).replace(/[:*].*$/, ''));
      return '([^]*)';
    }
    return expressionPattern(expression, template);
  });
  return { pattern: new RegExp(`^${source}$`), names };
}
