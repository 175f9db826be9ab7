import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { callerIdentity } from '../caller-identity.js';

/**
 * Variables every stdio upstream gets from the gateway's environment, when set: what a program needs to find
 * its interpreter and libraries (`PATH`), its per-user files (`HOME`) and its text encoding (`LANG`).
 */
export const BASE_CHILD_ENV_NAMES: readonly string[] = ['PATH', 'HOME', 'LANG'];

/** Variable carrying the caller's `sub` to the child, with `identityEnv` on. */
export const CALLER_SUBJECT_ENV = 'MCP_CALLER_SUBJECT';
/** The caller's issuer (`iss`): with several trusted issuers, a subject is unique only within its issuer. */
export const CALLER_ISSUER_ENV = 'MCP_CALLER_ISSUER';
/** Variable carrying the caller's OAuth client id to the child, with `identityEnv` on. */
export const CALLER_CLIENT_ID_ENV = 'MCP_CALLER_CLIENT_ID';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks the names of variables to pass to a stdio upstream. The gateway's own settings (`MCP_AUTH_*`, the
 * introspection secret among them) never reach a child, and `MCP_CALLER_*` is the gateway's to set.
 *
 * @param setting - Named in the error, e.g. `MCP_AUTH_UPSTREAM_ENV`.
 * @throws ConfigurationError for a name that is not a variable name, or is reserved.
 */
export function checkChildEnvNames(names: readonly string[], setting: string): string[] {
  for (const name of names) {
    if (!ENV_NAME.test(name)) throw new ConfigurationError(setting, `"${name}" is not an environment variable name (letters, digits and _, not starting with a digit)`);
    if (name.toUpperCase().startsWith('MCP_AUTH_')) {
      throw new ConfigurationError(setting, `"${name}" is one of the gateway's own settings, which never reach the upstream process; pass the upstream its own variable instead`);
    }
    if (name.toUpperCase().startsWith('MCP_CALLER_')) {
      throw new ConfigurationError(setting, `"${name}" is reserved for the caller's identity; set MCP_AUTH_IDENTITY_ENV=on to pass it`);
    }
  }
  return [...new Set(names)];
}

/**
 * The environment a stdio upstream starts with: `PATH`, `HOME` and `LANG`, then the variables named in
 * `names`, each copied from `source` when set there, and nothing else. Never the token.
 *
 * @param source - Where the values come from: the gateway's environment.
 */
export function childEnvironment(names: readonly string[], source: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...BASE_CHILD_ENV_NAMES, ...names]) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * `env` plus the caller's identity (`MCP_CALLER_SUBJECT`, `MCP_CALLER_CLIENT_ID`, `MCP_CALLER_ISSUER`), each set only when the token
 * carries it (and it is not empty). The process serves this one caller only, so this is who every request it gets comes from.
 * Values are encoded as the identity headers are ({@link callerIdentity}): plain visible ASCII as it is, anything
 * else (a NUL, which no variable can hold, among it) as `=?base64?…?=`, so two callers never get the same values.
 */
export function withCallerIdentity(env: Readonly<Record<string, string>>, auth: AuthInfo): Record<string, string> {
  const out = { ...env };
  const caller = callerIdentity(auth);
  if (caller.subject) out[CALLER_SUBJECT_ENV] = caller.subject;
  if (caller.clientId) out[CALLER_CLIENT_ID_ENV] = caller.clientId;
  if (caller.issuer) out[CALLER_ISSUER_ENV] = caller.issuer;
  return out;
}
