import type { ConfigurationError } from '../core/errors.js';
import { GATEWAY_SETTINGS } from './gateway-config.js';

/**
 * A configuration error as the gateway reports it: one line naming the setting, and its flag when it has one, then
 * what is wrong and how to fix it, e.g. `MCP_AUTH_POLICY (--policy): policy file /etc/mcp/policy.json is not valid
 * JSON at line 3, column 5: …`. Used for start-up failures and for a policy reload that was refused, so that both
 * say the same thing; never a stack trace.
 */
export function describeConfigurationError(error: ConfigurationError): string {
  const prefix = `${error.setting}: `;
  const detail = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  const setting = GATEWAY_SETTINGS.find((s) => s.env === error.setting);
  const name = setting?.flag ? `${error.setting} (${setting.flag})` : error.setting;
  return `${name}: ${detail}`.replace(/\s*\n\s*/g, ' ');
}
