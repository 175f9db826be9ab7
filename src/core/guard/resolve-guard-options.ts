import { checkInteger, checkStringList } from '../kernel/settings.js';
import { canonicalizeResourceUri } from '../kernel/canonical-resource.js';
import { checkIssuers } from '../token/issuer-identifier.js';
import { isScopeToken } from '../wire/scope-token.js';
import { ConfigurationError } from '../kernel/errors.js';
import { collectConfigurationProblems } from '../kernel/configuration-problems.js';
import type { GuardOptions } from './guard-options.js';
import { checkLogOptions } from '../kernel/log-options.js';
import { resolveListsMode, type ListsMode } from '../policy/lists-mode.js';
import { resolveAuditOptions, type AuditSettingNames, type ResolvedAuditOptions } from '../audit/audit-options.js';

export { checkIssuer } from '../token/issuer-identifier.js';

/**
 * Names under which each setting is reported in start-up errors. Options passed in code are reported
 * as `options.x`; options loaded from the environment as the variable (`MCP_AUTH_ISSUER`, …), so the
 * message always names what the user actually has to change.
 */
export type SettingNames = Partial<Record<keyof GuardOptions, string>> & {
  /** Nested settings, by option path (e.g. `introspection.endpoint`). */
  readonly [path: string]: string | undefined;
};

/** Options after validation, with defaults applied and derived values computed once. */
export interface ResolvedGuardOptions extends GuardOptions {
  /** Canonical resource URI (RFC 8707 §2). */
  resource: string;
  /** Every trusted issuer, from `issuer` or `issuers`, exactly as configured. */
  issuers: readonly string[];
  /** Path of the MCP endpoint (from the canonical resource); `/` for a path-less resource. */
  resourcePath: string;
  authorizationServers: readonly string[];
  allowedOrigins: readonly string[];
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  maxJsonDepth: number;
  metadataMaxAgeSeconds: number;
  /** What lists show (see {@link GuardOptions.lists}). */
  lists: ListsMode;
  /** The audit trail's options, validated (see {@link GuardOptions.audit}); undefined when it is off. */
  auditSettings: ResolvedAuditOptions | undefined;
}

/** Default {@link GuardOptions.bodyTimeoutMs}, in milliseconds: ample for a 1 MiB body on a slow link. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;
/** Default {@link GuardOptions.maxBodyBytes}, in bytes: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
/** Largest {@link GuardOptions.maxBodyBytes}, in bytes: 64 MiB. */
export const MAX_BODY_BYTES = 64 * 1_048_576;
/** Largest {@link GuardOptions.bodyTimeoutMs}, in milliseconds: Node's own request timeout (300 s). */
export const MAX_BODY_TIMEOUT_MS = 300_000;

function nameOf(names: SettingNames, key: keyof GuardOptions): string {
  return names[key] ?? `options.${key}`;
}

/** How each audit option is named in errors: by the variable it was read from, else `options.audit.…`. */
function auditNames(names: SettingNames): AuditSettingNames {
  const of = (key: string): string => names[`audit.${key}`] ?? `options.audit.${key}`;
  return {
    to: names['audit.to'] ?? names.audit ?? 'options.audit.to',
    arguments: of('arguments'),
    redact: of('redact'),
    maxArgumentBytes: of('maxArgumentBytes'),
    maxFileBytes: of('maxFileBytes'),
    files: of('files'),
    bufferBytes: of('bufferBytes'),
  };
}

/**
 * Validates options at start-up and applies defaults. Throws one `ConfigurationError` naming every bad setting
 * (see its `problems`). Token-verification options are validated again (and in depth) by the token verifier.
 */
export function resolveGuardOptions(options: GuardOptions, names: SettingNames = {}): ResolvedGuardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('options', 'mcpOAuthGuard needs an options object with at least issuer, resource and handler');
  }
  return collectConfigurationProblems((problems) => {
    const issuers = problems.check(() => checkIssuers(options.issuer, options.issuers, { issuer: nameOf(names, 'issuer'), issuers: nameOf(names, 'issuers') }));
    const resource = problems.check(() => {
      if (typeof options.resource !== 'string' || options.resource.length === 0) {
        throw new ConfigurationError(nameOf(names, 'resource'), 'is required: set it to the public URL of your MCP endpoint, e.g. https://mcp.example.com/mcp');
      }
      return canonicalizeResourceUri(options.resource, nameOf(names, 'resource'));
    });
    const authorizationServers = problems.check(() => {
      const list = checkStringList(options.authorizationServers, nameOf(names, 'authorizationServers')) ?? issuers;
      // Undefined only when the issuers were refused: that problem is listed already.
      if (list !== undefined && list.length === 0) {
        throw new ConfigurationError(nameOf(names, 'authorizationServers'), 'must name at least one authorization server (MCP requires a non-empty authorization_servers)');
      }
      // Clients get their tokens from a server this list names (RFC 9728 §2, MCP authorization): one whose tokens
      // the guard refuses is a dead end. Compared exactly, as the guard compares `iss` and clients the metadata's
      // `issuer` (RFC 8414 §3.3): an alias of a trusted issuer is a trusted issuer only when listed as one.
      const stranger = issuers === undefined ? undefined : list?.find((server) => !issuers.includes(server));
      if (stranger !== undefined) {
        const issuerSetting = options.issuers === undefined ? nameOf(names, 'issuer') : nameOf(names, 'issuers');
        throw new ConfigurationError(
          nameOf(names, 'authorizationServers'),
          `"${stranger}" is not a trusted issuer (${issuerSetting}: ${issuers!.join(', ')}): tokens from it would be refused. Add it to ${issuerSetting}, or leave it out`,
        );
      }
      return list;
    });
    problems.check(() => checkStringList(options.audiences, nameOf(names, 'audiences')));
    problems.check(() => {
      const list = options.challengeScopes;
      if (list !== undefined && (!Array.isArray(list) || !list.every(isScopeToken))) {
        throw new ConfigurationError(nameOf(names, 'challengeScopes'), 'must be a list of scope tokens (RFC 6749 section 3.3: no spaces, quotes or backslashes)');
      }
    });
    const allowedOrigins = problems.check(() => checkStringList(options.allowedOrigins, nameOf(names, 'allowedOrigins')));
    problems.check(() => {
      if (options.resourceDocumentation !== undefined && !URL.canParse(options.resourceDocumentation)) {
        throw new ConfigurationError(nameOf(names, 'resourceDocumentation'), 'must be an absolute URL');
      }
    });
    problems.check(() => {
      if (options.onDecision !== undefined && typeof options.onDecision !== 'function') throw new ConfigurationError(nameOf(names, 'onDecision'), 'must be a function');
    });
    problems.check(() => checkLogOptions(options, { logger: nameOf(names, 'logger'), logLevel: nameOf(names, 'logLevel'), requestLog: nameOf(names, 'requestLog') }));
    const maxBodyBytes = problems.check(() => checkInteger(options.maxBodyBytes, nameOf(names, 'maxBodyBytes'), DEFAULT_MAX_BODY_BYTES, { max: MAX_BODY_BYTES }));
    const bodyTimeoutMs = problems.check(() => checkInteger(options.bodyTimeoutMs, nameOf(names, 'bodyTimeoutMs'), DEFAULT_BODY_TIMEOUT_MS, { max: MAX_BODY_TIMEOUT_MS }));
    const maxJsonDepth = problems.check(() => checkInteger(options.maxJsonDepth, nameOf(names, 'maxJsonDepth'), 64, { max: 1_000 }));
    const metadataMaxAgeSeconds = problems.check(() => checkInteger(options.metadataMaxAgeSeconds, nameOf(names, 'metadataMaxAgeSeconds'), 3600, { max: 31_536_000 }));
    const lists = problems.check(() => resolveListsMode(options.lists, nameOf(names, 'lists')));
    const auditSettings = problems.check(() => resolveAuditOptions(options.audit, auditNames(names)));
    problems.check(() => {
      if (options.onAuditDropped !== undefined && typeof options.onAuditDropped !== 'function') throw new ConfigurationError(nameOf(names, 'onAuditDropped'), 'must be a function');
      if (options.hiddenTarget !== undefined && typeof options.hiddenTarget !== 'function') throw new ConfigurationError(nameOf(names, 'hiddenTarget'), 'must be a function');
    });
    problems.throwIfAny();
    const path = new URL(resource!).pathname;
    return {
      ...options,
      issuers: issuers!,
      resource: resource!,
      resourcePath: path === '' ? '/' : path,
      authorizationServers: authorizationServers!,
      allowedOrigins: allowedOrigins ?? [],
      maxBodyBytes: maxBodyBytes!,
      bodyTimeoutMs: bodyTimeoutMs!,
      maxJsonDepth: maxJsonDepth!,
      metadataMaxAgeSeconds: metadataMaxAgeSeconds!,
      lists: lists!,
      auditSettings,
    };
  });
}
