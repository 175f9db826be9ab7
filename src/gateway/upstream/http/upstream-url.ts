/**
 * The upstream MCP endpoint's URL as a setting (`MCP_AUTH_UPSTREAM`, a server's `url`): read apart from the proxy,
 * so that a configuration can be read and checked without loading the proxy's HTTP client.
 */
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { parseUrlSetting } from '../../../core/kernel/settings.js';

/**
 * The upstream MCP endpoint: an absolute http(s) URL without credentials (they would be sent with every
 * request and show up in logs and process listings) or fragment.
 *
 * @throws ConfigurationError naming `setting`.
 */
export function parseUpstreamUrl(value: unknown, setting = 'upstream'): URL {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigurationError(setting, 'is required: set it to the URL of the upstream MCP endpoint, e.g. http://127.0.0.1:3001/mcp');
  }
  return parseUrlSetting(value, setting, { protocols: ['http:', 'https:'], example: 'http://127.0.0.1:3001/mcp' });
}
