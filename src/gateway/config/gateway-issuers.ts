/**
 * The issuers the gateway accepts tokens from, as its settings give them: one place, so that the connected
 * accounts' login issuer, the upstream credentials and the checks all read the same list.
 */
import type { GuardOptions } from '../../core/guard/guard-options.js';

/**
 * The gateway's issuers: `issuers` (`MCP_AUTH_ISSUER` listing several), else the one `issuer`, else none (the
 * guard's own settings problem then says what to set).
 *
 * @example
 * gatewayIssuers({ issuer: 'https://id.example.com' }); // ['https://id.example.com']
 */
export function gatewayIssuers(guard: Pick<GuardOptions, 'issuer' | 'issuers'> | undefined): readonly string[] {
  return guard?.issuers ?? (guard?.issuer !== undefined ? [guard.issuer] : []);
}
