/**
 * The one set of setting validators: every option and environment variable that is an integer, a list or
 * a URL is checked here, so a bad value gets the same message wherever it is configured. Each throws a
 * `ConfigurationError` naming the setting (an option path such as `options.maxBodyBytes`, or a variable
 * such as `MCP_AUTH_MAX_BODY_BYTES`).
 */
import { ConfigurationError } from './errors.js';

/**
 * A setting as text (an environment variable, a flag): trimmed, or undefined when unset or blank.
 *
 * @example
 * readSetting(process.env, 'MCP_AUTH_ISSUER');
 */
export function readSetting(settings: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  const v = settings[name]?.trim();
  return v ? v : undefined;
}

/** Largest delay Node's timers take, in milliseconds (2^31 - 1). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * An integer option: `fallback` when undefined, else a whole number within `min`..`max`.
 *
 * @example
 * checkInteger(options.maxSessions, 'options.maxSessions', 1000, { min: 1 }); // 1000 when unset
 */
export function checkInteger(value: unknown, setting: string, fallback: number, range: { min?: number; max?: number } = {}): number {
  if (value === undefined) return fallback;
  const min = range.min ?? 1;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(setting, `must be a whole number from ${min} to ${max} (got ${String(value)})`);
  }
  return value;
}

/**
 * A duration option in milliseconds that a timer waits for: `fallback` when undefined, else a whole number from
 * `min` (default 1) to {@link MAX_TIMER_MS}, since Node fires a longer timer after 1 ms instead.
 *
 * @example
 * checkDuration(options.connectTimeoutMs, 'connectTimeoutMs', 10_000); // 10 s when unset
 */
export function checkDuration(value: unknown, setting: string, fallback: number, range: { min?: number } = {}): number {
  return checkInteger(value, setting, fallback, { min: range.min ?? 1, max: MAX_TIMER_MS });
}

/**
 * A number option (seconds, milliseconds): `fallback` when undefined, else finite and ≥ 0; `integer` and
 * `positive` narrow it further.
 *
 * @example
 * checkNumber(options.clockToleranceSeconds, 'clockToleranceSeconds', 5); // any finite number ≥ 0
 */
export function checkNumber(value: unknown, setting: string, fallback: number, rules: { integer?: boolean; positive?: boolean } = {}): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ConfigurationError(setting, 'must be a finite, non-negative number');
  }
  if (rules.integer === true && !Number.isInteger(value)) throw new ConfigurationError(setting, 'must be a whole number');
  if (rules.positive === true && value === 0) throw new ConfigurationError(setting, 'must be greater than zero');
  return value;
}

/**
 * An integer written as text (an environment variable or a flag): undefined when unset or blank, else
 * decimal digits within `min`..`max`.
 */
export function parseIntegerSetting(text: string | undefined, setting: string, min: number, max: number): number | undefined {
  const v = text?.trim();
  if (v === undefined || v === '') return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new ConfigurationError(setting, `must be a whole number from ${min} to ${max} (got "${v}")`);
  }
  return Number(v);
}

/**
 * What an on/off word means: `on`, `true`, `yes`, `1` are true and `off`, `false`, `no`, `0` false, in any case;
 * undefined for any other text (a setting that also takes other values, such as a list, reads it next).
 *
 * @example
 * switchWord('Yes'); // true
 * switchWord('subject=X-User'); // undefined
 */
export function switchWord(text: string): boolean | undefined {
  const lower = text.trim().toLowerCase();
  if (lower === 'on' || lower === 'true' || lower === 'yes' || lower === '1') return true;
  if (lower === 'off' || lower === 'false' || lower === 'no' || lower === '0') return false;
  return undefined;
}

/**
 * An on/off setting written as text (see {@link switchWord}): undefined when unset or blank. The one parser of
 * every on/off environment variable and flag, so each accepts the same words.
 *
 * @example
 * parseSwitchSetting(process.env.MCP_AUTH_STRICT_JWT, 'MCP_AUTH_STRICT_JWT'); // true for "on", "true", "1", "yes"
 *
 * @throws ConfigurationError naming `setting` for any other value.
 */
export function parseSwitchSetting(text: string | undefined, setting: string): boolean | undefined {
  const v = text?.trim();
  if (v === undefined || v === '') return undefined;
  const value = switchWord(v);
  if (value === undefined) throw new ConfigurationError(setting, `is "${v}"; use on or off`);
  return value;
}

/**
 * What zero means to a setting that takes `off` besides a value (see {@link parseOffOr}): `off`, where its docs make
 * zero mean none (no bound, nothing kept), or `refused`, where zero is no value of it (a rate of zero requests).
 */
export type ZeroMeaning = 'off' | 'refused';

/**
 * Whether a setting's value says `off` (any case, spacing aside), or is `false` (a configuration file's): the one
 * reading of `off` every setting shares.
 *
 * @example
 * isOff(' OFF '); // true
 */
export function isOff(value: unknown): boolean {
  return value === false || (typeof value === 'string' && value.trim().toLowerCase() === 'off');
}

/**
 * The one rule of every setting that takes `off` to disable a bound or a feature besides a value that `read` parses
 * (a rate, a number): `off` in any case (and `false`, given in code or a configuration file) is undefined, disabled.
 * Zero (`0`, or a zero count such as `0/s`) is the same as `off` when `zero` is `'off'`, and refused with "use off to
 * disable" when it is `'refused'`, never taken as a value. Anything else goes to `read`; its error then says that
 * `off` is allowed too.
 *
 * @example
 * parseOffOr('off', 'MCP_AUTH_INTROSPECTION_RATE_LIMIT', 'refused', read); // undefined
 * parseOffOr('0/s', 'MCP_AUTH_INTROSPECTION_RATE_LIMIT', 'refused', read); // throws: …; use off to disable
 * @throws ConfigurationError naming `setting`.
 */
export function parseOffOr<T>(value: unknown, setting: string, zero: ZeroMeaning, read: (value: unknown) => T): T | undefined {
  if (isOff(value)) return undefined;
  if (isZero(value)) {
    if (zero === 'off') return undefined;
    throw new ConfigurationError(setting, `is ${JSON.stringify(value)}, and zero is no value of it; use off to disable`);
  }
  try {
    return read(value);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    throw new ConfigurationError(setting, `${error.problems[0]?.detail ?? error.message}; or off to disable`);
  }
}

/**
 * A whole number written as text where zero means none (no bound, nothing kept, nothing reused), which therefore
 * takes `off` for zero too, by the rule of {@link parseOffOr}: undefined when unset or blank, 0 for `off` or `0`,
 * else decimal digits from 0 to `max`.
 *
 * @example
 * parseIntegerOrOff('off', 'MCP_AUTH_INTROSPECTION_CACHE_TTL', 86_400); // 0
 * parseIntegerOrOff('60', 'MCP_AUTH_INTROSPECTION_CACHE_TTL', 86_400); // 60
 * @throws ConfigurationError naming `setting`, whose message says that `off` is allowed too.
 */
export function parseIntegerOrOff(text: string | undefined, setting: string, max: number): number | undefined {
  const v = text?.trim();
  if (v === undefined || v === '') return undefined;
  return parseOffOr(v, setting, 'off', () => parseIntegerSetting(v, setting, 0, max)) ?? 0;
}

/** Zero as a setting may write it: the number, or text whose count is zero (`0`, `00`, `0/s`, `0 / min`). */
function isZero(value: unknown): boolean {
  return value === 0 || (typeof value === 'string' && /^\s*0+(?:\.0*)?\s*(?:\/.*)?$/.test(value));
}

/** A list written as text, separated by commas and/or white space; undefined when unset or blank. */
export function parseListSetting(text: string | undefined): string[] | undefined {
  const v = text?.trim();
  if (v === undefined || v === '') return undefined;
  return v.split(/[\s,]+/).filter(Boolean);
}

/** A list option: undefined when unset, else an array of non-empty strings (copied). */
export function checkStringList(value: unknown, setting: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length === 0)) {
    throw new ConfigurationError(setting, 'must be a list of non-empty strings');
  }
  return [...(value as string[])];
}

/**
 * The one place a setting's text becomes a URL: the WHATWG parse, or a `ConfigurationError` naming `setting` with
 * `problem` as its message (each caller says what to give instead, and whether the value may be repeated).
 * The rules of each kind of URL (schemes, loopback, credentials) stay with the caller.
 *
 * @example
 * parseAbsoluteUrl(value, 'MCP_AUTH_RESOURCE', `"${value}" is not an absolute URL`);
 */
export function parseAbsoluteUrl(value: string, setting: string, problem: string): URL {
  try {
    return new URL(value);
  } catch {
    throw new ConfigurationError(setting, problem);
  }
}

/** Rules of {@link parseUrlSetting}. */
export interface UrlSettingRules {
  /** Allowed schemes, with the colon, e.g. `['http:', 'https:']`. */
  protocols: readonly string[];
  /** An example value for the "not an absolute URL" message. */
  example: string;
}

/** An absolute URL setting, parsed (WHATWG URL): one of `rules.protocols`, no credentials, no fragment. */
export function parseUrlSetting(value: unknown, setting: string, rules: UrlSettingRules): URL {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigurationError(setting, `is required: set it to an absolute URL, e.g. ${rules.example}`);
  }
  const url = parseAbsoluteUrl(value, setting, `"${value}" is not an absolute URL; give the full URL, e.g. ${rules.example}`);
  if (!rules.protocols.includes(url.protocol)) {
    throw new ConfigurationError(setting, `must be an ${rules.protocols.map((p) => p.slice(0, -1)).join(' or ')} URL (got ${url.protocol})`);
  }
  // Credentials would be sent with every request and show up in logs; a fragment (even empty) means nothing here.
  if (url.username || url.password) throw new ConfigurationError(setting, 'must not contain credentials');
  if (value.includes('#')) throw new ConfigurationError(setting, 'must not contain a fragment');
  return url;
}
