import type { ServerMetadata } from 'openid-client';
import { describeClaimValue } from '../../../core/token/jwt-verifier.js';
import type { CheckResult } from './check-result.js';

/** One thing the metadata lacks: whether clients stop there (`fail`) or may still get on (`warn`), and what to do. */
interface Shortfall {
  readonly status: 'fail' | 'warn';
  readonly message: string;
  readonly fix: string;
}

/**
 * Checks an issuer's metadata for what MCP clients require of an authorization server before they ask it for a
 * token (MCP 2025-11-25 basic/authorization, "Authorization Code Protection" and "Client Registration
 * Approaches"; 2026-07-28 basic/authorization/security-considerations and client-registration):
 * - `code_challenge_methods_supported` must list `S256`: without it clients MUST refuse to proceed (fail);
 * - `authorization_endpoint` and `token_endpoint`, where the authorization code flow runs (RFC 8414 §2; fail);
 * - a way for a client without a pre-registered id to get one: `client_id_metadata_document_supported` (Client
 *   ID Metadata Documents) or `registration_endpoint` (RFC 7591); without either only pre-registered clients get
 *   on (warn).
 *
 * One line per issuer; `skip` when its metadata could not be read (its issuer line says why). Values read from
 * the network are shown printable and bounded.
 *
 * @example
 * checkAuthorizationServer('https://as.example.com', { issuer: 'https://as.example.com', code_challenge_methods_supported: ['plain'] });
 * // { check: 'authorization server', status: 'fail', message: 'code_challenge_methods_supported lists [plain], not S256, …', … }
 */
export function checkAuthorizationServer(issuer: string, metadata: ServerMetadata | undefined): CheckResult {
  const line = { check: 'authorization server', subject: issuer } as const;
  if (metadata === undefined) return { ...line, status: 'skip', message: "not checked, as the issuer's metadata was not usable (see its line)" };
  const shortfalls = [pkceShortfall(metadata), ...endpointShortfalls(metadata), registrationShortfall(metadata)].filter((each): each is Shortfall => each !== undefined);
  if (shortfalls.length === 0) return { ...line, status: 'ok', message: `what MCP clients need: authorization and token endpoints, PKCE with S256, ${registrationOf(metadata)}` };
  return {
    ...line,
    status: shortfalls.some((each) => each.status === 'fail') ? 'fail' : 'warn',
    message: shortfalls.map((each) => each.message).join('; '),
    fix: shortfalls.map((each) => each.fix).join('; '),
  };
}

function pkceShortfall(metadata: ServerMetadata): Shortfall | undefined {
  const methods: unknown = metadata.code_challenge_methods_supported;
  if (Array.isArray(methods) && methods.includes('S256')) return undefined;
  const fix = 'enable PKCE with S256 on the authorization server so that its metadata lists "S256" in code_challenge_methods_supported';
  if (methods === undefined) return { status: 'fail', message: 'the metadata has no code_challenge_methods_supported, so MCP clients refuse to proceed (no PKCE)', fix };
  return { status: 'fail', message: `code_challenge_methods_supported lists ${describeClaimValue(methods)}, not S256, so MCP clients refuse to proceed`, fix };
}

function endpointShortfalls(metadata: ServerMetadata): Shortfall[] {
  const missing = (['authorization_endpoint', 'token_endpoint'] as const).filter((name) => typeof metadata[name] !== 'string' || metadata[name] === '');
  if (missing.length === 0) return [];
  return [{
    status: 'fail',
    message: `the metadata has no ${missing.join(' and no ')}, so clients cannot run the authorization code flow`,
    fix: `have the authorization server publish ${missing.join(' and ')} (RFC 8414 §2)`,
  }];
}

function registrationShortfall(metadata: ServerMetadata): Shortfall | undefined {
  if (registrationOf(metadata) !== undefined) return undefined;
  return {
    status: 'warn',
    message: 'neither client_id_metadata_document_supported nor a registration_endpoint: only clients given a client id beforehand can sign in',
    fix: 'enable Client ID Metadata Documents or dynamic client registration (RFC 7591) on the authorization server, or pre-register each MCP client',
  };
}

/** How a client without a client id gets one, as the metadata says; undefined when it offers no way. */
function registrationOf(metadata: ServerMetadata): string | undefined {
  const documents = metadata['client_id_metadata_document_supported'] === true;
  const registration = typeof metadata.registration_endpoint === 'string' && metadata.registration_endpoint !== '';
  if (documents && registration) return 'Client ID Metadata Documents and dynamic client registration';
  if (documents) return 'Client ID Metadata Documents';
  if (registration) return 'dynamic client registration (registration_endpoint)';
  return undefined;
}
