import { ConfigurationError } from '../../core/kernel/errors.js';
import { GATEWAY_SETTINGS } from './gateway-config.js';

/**
 * A configuration error as the gateway reports it: one line naming the setting, and its flag when it has one, then
 * what is wrong and how to fix it, e.g. `MCP_AUTH_POLICY (--policy): policy file /etc/mcp/policy.json is not valid
 * JSON at line 3, column 5: …`. When several settings are wrong (see `ConfigurationError.problems`), a line that
 * counts them, then one such line for each. Used for start-up failures and for a policy reload that was refused, so
 * that both say the same thing; never a stack trace.
 */
export function describeConfigurationError(error: ConfigurationError): string {
  const named = error.problems.map((problem) => {
    const setting = GATEWAY_SETTINGS.find((s) => s.env === problem.setting);
    return { setting: setting?.flag ? `${problem.setting} (${setting.flag})` : problem.setting, detail: problem.detail };
  });
  // The same layout as the error's own message, with the flags added.
  const message = ConfigurationError.of(named).message;
  return named.length === 1 ? message.replace(/\s*\n\s*/g, ' ') : message;
}
