/**
 * The audit trail's environment variables, read into {@link AuditOptions}: `MCP_AUTH_AUDIT` (off, stdout, otel or an
 * absolute file path) and the `MCP_AUTH_AUDIT_*` settings that shape it. The gateway reads them through
 * `loadOptionsFromEnv`, as the middleware does.
 */
import { parseIntegerSetting, parseSwitchSetting, readSetting, switchWord } from '../kernel/settings.js';
import { collectConfigurationProblems, type ConfigurationProblems } from '../kernel/configuration-problems.js';
import type { LibrarySettingName } from '../kernel/setting-names.js';
import type { AuditOptions, AuditSettingNames } from './audit-options.js';

/** The variable of each audit option read from the environment. */
export const AUDIT_ENV_VARIABLES = {
  to: 'MCP_AUTH_AUDIT',
  arguments: 'MCP_AUTH_AUDIT_ARGUMENTS',
  redact: 'MCP_AUTH_AUDIT_REDACT',
  maxFileBytes: 'MCP_AUTH_AUDIT_MAX_BYTES',
  files: 'MCP_AUTH_AUDIT_FILES',
} as const satisfies Partial<Record<keyof AuditOptions, LibrarySettingName>>;

/** How the audit options are named in errors when they come from the environment. */
export const AUDIT_ENV_NAMES: AuditSettingNames = {
  ...AUDIT_ENV_VARIABLES,
  maxArgumentBytes: 'options.audit.maxArgumentBytes',
  bufferBytes: 'options.audit.bufferBytes',
};

/**
 * Reads the audit settings: undefined when `MCP_AUTH_AUDIT` is unset or off. What the values mean (an absolute path,
 * pointers, sizes) is checked by the guard, under these variables' names.
 *
 * @example
 * readAuditSettings({ MCP_AUTH_AUDIT: '/var/log/mcp/audit.jsonl', MCP_AUTH_AUDIT_FILES: '10' });
 * // { to: '/var/log/mcp/audit.jsonl', files: 10 }
 * @param found - Where to record problems, each bad variable being left out of the options (so that the guard still
 *   checks the others); without it, they are thrown.
 * @throws ConfigurationError naming each bad variable, and each `MCP_AUTH_AUDIT_*` set while the audit trail is off,
 *   when `found` is not given.
 */
export function readAuditSettings(env: Readonly<Record<string, string | undefined>>, found?: ConfigurationProblems): AuditOptions | undefined {
  if (found === undefined) return collectConfigurationProblems((problems) => readAuditSettings(env, problems));
  const problems = found;
  const to = readSetting(env, AUDIT_ENV_VARIABLES.to);
  const off = to === undefined || switchWord(to) === false;
  const args = problems.check(() => parseSwitchSetting(readSetting(env, AUDIT_ENV_VARIABLES.arguments), AUDIT_ENV_VARIABLES.arguments));
  const redactText = readSetting(env, AUDIT_ENV_VARIABLES.redact);
  // Pointers may hold spaces (a key may): only commas separate them.
  const redact = redactText?.split(',').map((p) => p.trim()).filter((p) => p !== '');
  const maxFileBytes = problems.check(() => parseIntegerSetting(readSetting(env, AUDIT_ENV_VARIABLES.maxFileBytes), AUDIT_ENV_VARIABLES.maxFileBytes, 4_096, Number.MAX_SAFE_INTEGER));
  const files = problems.check(() => parseIntegerSetting(readSetting(env, AUDIT_ENV_VARIABLES.files), AUDIT_ENV_VARIABLES.files, 1, 1_000));
  if (off) {
    for (const name of [AUDIT_ENV_VARIABLES.arguments, AUDIT_ENV_VARIABLES.redact, AUDIT_ENV_VARIABLES.maxFileBytes, AUDIT_ENV_VARIABLES.files]) {
      if (readSetting(env, name) !== undefined) problems.add(name, `does nothing while the audit trail is off: set ${AUDIT_ENV_VARIABLES.to} (stdout, otel or an absolute file path), or leave it out`);
    }
    return undefined;
  }
  return {
    to,
    ...(args !== undefined ? { arguments: args } : {}),
    ...(redact !== undefined ? { redact } : {}),
    ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
    ...(files !== undefined ? { files } : {}),
  };
}
