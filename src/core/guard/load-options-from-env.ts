import { isOff, parseIntegerOrOff, parseIntegerSetting, parseListSetting, parseSwitchSetting, readSetting } from '../kernel/settings.js';
import { parseLogLevel } from '../kernel/log-options.js';
import { isSupportedJwsAlgorithm, SUPPORTED_JWS_ALGORITHMS } from '../jwt/jws-algorithms.js';
import { ConfigurationError } from '../kernel/errors.js';
import { collectConfigurationProblems } from '../kernel/configuration-problems.js';
import { refuseUnknownSettings } from '../kernel/unknown-settings.js';
import type { EveryNameListed, LibrarySettingName } from '../kernel/setting-names.js';
import type { GuardOptions } from './guard-options.js';
import { createGuard } from './create-guard.js';
import { parseRefusalsPerAddress } from '../token/introspection-bounds.js';
import { loadPolicyFile } from '../policy/load-policy-file.js';
import { MAX_BODY_BYTES, MAX_BODY_TIMEOUT_MS, type SettingNames } from './resolve-guard-options.js';
import { AUDIT_ENV_VARIABLES, readAuditSettings } from '../audit/audit-settings.js';

/** The environment variables `loadOptionsFromEnv` reads, and the option each sets. */
export const ENV_SETTING_NAMES = {
  issuer: 'MCP_AUTH_ISSUER',
  issuers: 'MCP_AUTH_ISSUER',
  resource: 'MCP_AUTH_RESOURCE',
  audiences: 'MCP_AUTH_AUDIENCE',
  jwksUri: 'MCP_AUTH_JWKS_URI',
  algorithms: 'MCP_AUTH_ALGORITHMS',
  policy: 'MCP_AUTH_POLICY',
  clockToleranceSeconds: 'MCP_AUTH_CLOCK_TOLERANCE',
  allowedOrigins: 'MCP_AUTH_ALLOWED_ORIGINS',
  challengeScopes: 'MCP_AUTH_CHALLENGE_SCOPES',
  authorizationServers: 'MCP_AUTH_AUTHORIZATION_SERVERS',
  strictJwtAccessTokens: 'MCP_AUTH_STRICT_JWT',
  resourceName: 'MCP_AUTH_RESOURCE_NAME',
  resourceDocumentation: 'MCP_AUTH_RESOURCE_DOCUMENTATION',
  maxBodyBytes: 'MCP_AUTH_MAX_BODY_BYTES',
  bodyTimeoutMs: 'MCP_AUTH_BODY_TIMEOUT_MS',
  httpTimeoutMs: 'MCP_AUTH_HTTP_TIMEOUT_MS',
  introspection: 'MCP_AUTH_INTROSPECTION_CLIENT_ID',
  dpop: 'MCP_AUTH_DPOP',
  lists: 'MCP_AUTH_LISTS',
  rateLimit: 'MCP_AUTH_RATE_LIMIT',
  logLevel: 'MCP_AUTH_LOG_LEVEL',
  requestLog: 'MCP_AUTH_REQUEST_LOG',
  audit: 'MCP_AUTH_AUDIT',
} as const satisfies SettingNames & Readonly<Record<string, LibrarySettingName>>;

const INTROSPECTION_SECRET = 'MCP_AUTH_INTROSPECTION_CLIENT_SECRET' satisfies LibrarySettingName;
const INTROSPECTION_ENDPOINT = 'MCP_AUTH_INTROSPECTION_ENDPOINT' satisfies LibrarySettingName;
const INTROSPECTION_ISSUER = 'MCP_AUTH_INTROSPECTION_ISSUER' satisfies LibrarySettingName;
const INTROSPECTION_CACHE_TTL = 'MCP_AUTH_INTROSPECTION_CACHE_TTL' satisfies LibrarySettingName;
const INTROSPECTION_RATE_LIMIT = 'MCP_AUTH_INTROSPECTION_RATE_LIMIT' satisfies LibrarySettingName;
const TOKEN_CACHE_MAX_BYTES = 'MCP_AUTH_TOKEN_CACHE_MAX_BYTES' satisfies LibrarySettingName;

/**
 * Every option `loadOptionsFromEnv` sets, nested ones by their path (`introspection.clientId`), and the variable it
 * reads: errors name the variable, and the configuration page lists the option next to it.
 */
export const ENV_OPTION_VARIABLES = {
  ...ENV_SETTING_NAMES,
  'introspection.clientId': 'MCP_AUTH_INTROSPECTION_CLIENT_ID',
  'introspection.clientSecret': INTROSPECTION_SECRET,
  'introspection.endpoint': INTROSPECTION_ENDPOINT,
  'introspection.issuer': INTROSPECTION_ISSUER,
  'introspection.cacheTtlSeconds': INTROSPECTION_CACHE_TTL,
  'introspection.refusalsPerAddress': INTROSPECTION_RATE_LIMIT,
  'tokenCache.maxBytes': TOKEN_CACHE_MAX_BYTES,
  'audit.to': AUDIT_ENV_VARIABLES.to,
  'audit.arguments': AUDIT_ENV_VARIABLES.arguments,
  'audit.redact': AUDIT_ENV_VARIABLES.redact,
  'audit.maxFileBytes': AUDIT_ENV_VARIABLES.maxFileBytes,
  'audit.files': AUDIT_ENV_VARIABLES.files,
} as const satisfies Readonly<Record<string, LibrarySettingName>>;

// Compiles only while every name the setting table gives the library is read here (a type error names the rest).
const everyLibrarySettingRead: EveryNameListed<LibrarySettingName, (typeof ENV_OPTION_VARIABLES)[keyof typeof ENV_OPTION_VARIABLES]> = true;
void everyLibrarySettingRead;

/** Every environment variable `loadOptionsFromEnv` reads, for spotting misspelt ones (see `findUnknownSettings`). */
export const GUARD_ENV_VARIABLES: readonly string[] = [...new Set(Object.values(ENV_OPTION_VARIABLES))];

/** Environment variables as `process.env` holds them: name → value. */
export type EnvironmentVariables = Readonly<Record<string, string | undefined>>;

/** A list separated by commas and/or white space. */
function readList(env: EnvironmentVariables, name: string): string[] | undefined {
  return parseListSetting(readSetting(env, name));
}

function readInteger(env: EnvironmentVariables, name: string, min: number, max: number): number | undefined {
  return parseIntegerSetting(readSetting(env, name), name, min, max);
}

/** Options of {@link loadOptionsFromEnv}. */
export interface LoadOptionsFromEnvOptions {
  /**
   * Other `MCP_AUTH_*` variables your application reads itself, which are then not reported as unknown.
   * Default none.
   */
  otherSettings?: Iterable<string>;
  /**
   * What to do with `MCP_AUTH_*` variables that are no setting: `refuse` (the default) reports each as a
   * configuration problem, with the setting likely meant; `ignore` leaves them to the application.
   */
  unknownSettings?: 'refuse' | 'ignore';
}

/**
 * Reads the guard's options from environment variables (every one is listed in docs/configuration.md) and validates them
 * all, so a misconfiguration fails at start-up with a message naming the variable and the fix. Every problem
 * is reported at once: an `MCP_AUTH_*` variable that is no setting (a misspelt `MCP_AUTH_POLICIES` would
 * otherwise leave every tool open), a bad number or URL, a policy file that cannot be used, a missing
 * required variable.
 *
 * @example
 * const options = loadOptionsFromEnv(process.env, { resource: 'http://127.0.0.1:3000/mcp' });
 * // An application with MCP_AUTH_* variables of its own names them:
 * loadOptionsFromEnv(process.env, {}, { otherSettings: ['MCP_AUTH_AUDIT_LOG'] });
 * @param env - Variables to read. Default `process.env`.
 * @param defaults - Values used when a variable is unset, e.g. `{ resource: 'http://127.0.0.1:3000/mcp' }`.
 * @param loadOptions - Which other `MCP_AUTH_*` variables are not unknown (see {@link LoadOptionsFromEnvOptions}).
 * @throws ConfigurationError naming each bad variable (several in one message; see its `problems`).
 */
export function loadOptionsFromEnv(env: EnvironmentVariables = process.env, defaults: Partial<GuardOptions> = {}, loadOptions: LoadOptionsFromEnvOptions = {}): GuardOptions {
  return collectConfigurationProblems((problems) => {
    if (loadOptions.unknownSettings !== 'ignore') {
      problems.check(() => refuseUnknownSettings(env, [...GUARD_ENV_VARIABLES, ...(loadOptions.otherSettings ?? [])]));
    }
    // One issuer or several (comma- or space-separated), compared exactly as written.
    const issuerList = readList(env, 'MCP_AUTH_ISSUER');
    const options: GuardOptions = { ...defaults, resource: readSetting(env, 'MCP_AUTH_RESOURCE') ?? defaults.resource ?? '' };
    if (issuerList !== undefined && issuerList.length > 1) {
      options.issuers = issuerList;
      delete options.issuer;
    } else if (issuerList !== undefined) {
      options.issuer = issuerList[0];
      delete options.issuers;
    } else if (options.issuers === undefined) {
      options.issuer = defaults.issuer ?? '';
    }
    const names: Record<string, string | undefined> = { ...ENV_OPTION_VARIABLES };
    if (!readSetting(env, 'MCP_AUTH_RESOURCE') && defaults.resource) names.resource = 'resource (default)';

    // Each variable is read on its own: a bad one is recorded and left unset, and the others are still checked.
    const set = <K extends keyof GuardOptions>(key: K, read: () => GuardOptions[K] | undefined): void => {
      const value = problems.check(read);
      if (value !== undefined) options[key] = value;
    };
    set('audiences', () => readList(env, 'MCP_AUTH_AUDIENCE'));
    set('jwksUri', () => readSetting(env, 'MCP_AUTH_JWKS_URI'));
    set('algorithms', () => {
      const algorithms = readList(env, 'MCP_AUTH_ALGORITHMS');
      for (const alg of algorithms ?? []) {
        if (!isSupportedJwsAlgorithm(alg)) {
          throw new ConfigurationError('MCP_AUTH_ALGORITHMS', `"${alg}" is not allowed; use asymmetric algorithms only: ${SUPPORTED_JWS_ALGORITHMS.join(', ')}`);
        }
      }
      return algorithms;
    });
    set('policy', () => {
      const policyPath = readSetting(env, 'MCP_AUTH_POLICY');
      return policyPath ? loadPolicyFile(policyPath, 'MCP_AUTH_POLICY') : undefined;
    });
    set('clockToleranceSeconds', () => readInteger(env, 'MCP_AUTH_CLOCK_TOLERANCE', 0, 300));
    set('allowedOrigins', () => readList(env, 'MCP_AUTH_ALLOWED_ORIGINS'));
    set('challengeScopes', () => readList(env, 'MCP_AUTH_CHALLENGE_SCOPES'));
    set('authorizationServers', () => readList(env, 'MCP_AUTH_AUTHORIZATION_SERVERS'));
    set('strictJwtAccessTokens', () => parseSwitchSetting(readSetting(env, 'MCP_AUTH_STRICT_JWT'), 'MCP_AUTH_STRICT_JWT'));
    set('resourceName', () => readSetting(env, 'MCP_AUTH_RESOURCE_NAME'));
    set('resourceDocumentation', () => readSetting(env, 'MCP_AUTH_RESOURCE_DOCUMENTATION'));
    set('maxBodyBytes', () => readInteger(env, 'MCP_AUTH_MAX_BODY_BYTES', 1, MAX_BODY_BYTES));
    set('bodyTimeoutMs', () => readInteger(env, 'MCP_AUTH_BODY_TIMEOUT_MS', 1, MAX_BODY_TIMEOUT_MS));
    set('httpTimeoutMs', () => readInteger(env, 'MCP_AUTH_HTTP_TIMEOUT_MS', 1, 120_000));
    // off, allow or require, in any case; the guard checks the value and names the variable.
    set('dpop', () => readSetting(env, 'MCP_AUTH_DPOP')?.toLowerCase() as GuardOptions['dpop']);
    // filtered or all, in any case; the guard checks the value and names the variable.
    set('lists', () => readSetting(env, 'MCP_AUTH_LISTS')?.toLowerCase() as GuardOptions['lists']);
    // "120/min" and the like; the guard parses it and names the variable.
    set('rateLimit', () => readSetting(env, 'MCP_AUTH_RATE_LIMIT'));
    // What is logged; where the lines go (the logger) is code's to say.
    set('logLevel', () => parseLogLevel(readSetting(env, 'MCP_AUTH_LOG_LEVEL'), 'MCP_AUTH_LOG_LEVEL'));
    set('requestLog', () => parseSwitchSetting(readSetting(env, 'MCP_AUTH_REQUEST_LOG'), 'MCP_AUTH_REQUEST_LOG'));
    // off, stdout, otel or an absolute file path, with the MCP_AUTH_AUDIT_* settings; the guard checks the values.
    set('audit', () => readAuditSettings(env, problems));
    const tokenCacheMaxBytes = problems.check(() => readInteger(env, TOKEN_CACHE_MAX_BYTES, 1, 4 * 1_073_741_824));
    if (tokenCacheMaxBytes !== undefined && options.tokenCache !== false) options.tokenCache = { ...options.tokenCache, maxBytes: tokenCacheMaxBytes };

    const clientId = readSetting(env, 'MCP_AUTH_INTROSPECTION_CLIENT_ID');
    const clientSecret = readSetting(env, INTROSPECTION_SECRET);
    const endpoint = readSetting(env, INTROSPECTION_ENDPOINT);
    const introspectionIssuer = readSetting(env, INTROSPECTION_ISSUER);
    // Seconds a revoked opaque token may stay usable; 0 (or off) asks the introspection endpoint on every request.
    const cacheTtlSeconds = problems.check(() => parseIntegerOrOff(readSetting(env, INTROSPECTION_CACHE_TTL), INTROSPECTION_CACHE_TTL, 86_400));
    // "20/s" and the like, or off; the guard parses it and names the variable.
    const rateSetting = readSetting(env, INTROSPECTION_RATE_LIMIT);
    const refusalsPerAddress = rateSetting === undefined ? undefined : isOff(rateSetting) ? false : rateSetting;
    // Checked here too, so that a bad value is named even when the settings around it are what is missing.
    if (rateSetting !== undefined) problems.check(() => parseRefusalsPerAddress(rateSetting, INTROSPECTION_RATE_LIMIT));
    // An endpoint alone would otherwise be ignored without a word, leaving opaque tokens refused.
    if (clientId !== undefined || clientSecret !== undefined || endpoint !== undefined || introspectionIssuer !== undefined || cacheTtlSeconds !== undefined || refusalsPerAddress !== undefined) {
      if (!clientId || !clientSecret) {
        problems.add(
          clientId ? INTROSPECTION_SECRET : 'MCP_AUTH_INTROSPECTION_CLIENT_ID',
          'introspection needs both MCP_AUTH_INTROSPECTION_CLIENT_ID and MCP_AUTH_INTROSPECTION_CLIENT_SECRET; set both, or none of the MCP_AUTH_INTROSPECTION_* variables to accept JWTs only',
        );
      } else {
        options.introspection = {
          clientId,
          clientSecret,
          ...(endpoint ? { endpoint } : {}),
          ...(introspectionIssuer ? { issuer: introspectionIssuer } : {}),
          ...(cacheTtlSeconds !== undefined ? { cacheTtlSeconds } : {}),
          ...(refusalsPerAddress !== undefined ? { refusalsPerAddress } : {}),
        };
      }
    }

    // Build (and drop) a guard: every check runs under the variables' names, and nothing reaches the network.
    // It runs even when a variable above was refused (and left unset), so that its problems are listed too.
    problems.check(() => createGuard(options, names));
    return options;
  });
}
