import { parseAbsoluteUrl } from '../core/kernel/settings.js';
import { ConfigurationError } from '../core/kernel/errors.js';

/**
 * The Redis URL as it may appear in a message: scheme, host, port and database, never the user or password
 * (a Redis URL often carries one), nor a query.
 *
 * @example
 * redactRedisUrl('redis://:s3cret@cache:6379/2'); // 'redis://cache:6379/2'
 */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(an unparsable URL)';
  }
}

/**
 * Checks a Redis URL at start-up: `redis://` or `rediss://` (TLS) with a host. The message never repeats the URL,
 * which may hold a password.
 *
 * @throws ConfigurationError naming `setting`.
 */
export function checkRedisUrl(url: unknown, setting: string): string {
  const problem = 'must be a Redis URL such as redis://host:6379 or rediss://:password@host:6380/0 (the value is not repeated here: it may hold a password)';
  if (typeof url !== 'string') throw new ConfigurationError(setting, problem);
  const parsed = parseAbsoluteUrl(url, setting, problem);
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') throw new ConfigurationError(setting, problem);
  return url;
}
