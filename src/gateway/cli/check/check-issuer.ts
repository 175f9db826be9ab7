import type { ServerMetadata } from 'openid-client';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { discoverIssuerMetadata, IssuerDiscoveryError, IssuerMismatchError, type DiscoveryFailure } from '../../../core/token/issuer-discovery.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import type { CheckResult } from './check-result.js';
import { describeIssuerDifference } from './issuer-difference.js';

/** What {@link checkIssuerMetadata} found: the report line, and the metadata when it could be read. */
export interface IssuerCheck {
  readonly result: CheckResult;
  readonly metadata?: ServerMetadata;
}

/**
 * Fetches an issuer's metadata with the guard's own discovery (RFC 8414, then OpenID Connect Discovery, each
 * request bounded by `timeoutMs`) and says what went wrong: the issuer is down, is no authorization server (404 at
 * both locations), answers something that is not JSON, or spells its `issuer` differently, shown character by
 * character.
 *
 * Every such problem fails, even when the guard itself needs nothing from the metadata (`MCP_AUTH_JWKS_URI` and
 * the introspection endpoint set): the guard advertises the issuer to MCP clients, which read its metadata to get
 * a token at all, and the tokens they get carry the metadata's `issuer` in `iss`.
 */
export async function checkIssuerMetadata(issuer: string, timeoutMs: number): Promise<IssuerCheck> {
  const failed = (message: string, fix: string, details?: readonly string[]): IssuerCheck => ({
    result: {
      check: 'issuer',
      subject: issuer,
      status: 'fail',
      message,
      fix,
      ...(details ? { details } : {}),
    },
  });
  let metadata: ServerMetadata;
  try {
    metadata = await discoverIssuerMetadata(issuer, timeoutMs);
  } catch (error) {
    if (error instanceof IssuerMismatchError) return mismatch(issuer, error.discovered, failed);
    if (error instanceof IssuerDiscoveryError) return explainDiscoveryFailure(issuer, error.failures, timeoutMs, failed);
    if (error instanceof ConfigurationError) return failed(`the metadata is unusable: ${error.message}`, 'fix the authorization server\'s metadata: the guard calls https endpoints only (http on loopback)');
    return failed(`discovery failed: ${explainFailure(error)}`, 'check the issuer URL (MCP_AUTH_ISSUER)');
  }
  return {
    metadata,
    result: { check: 'issuer', subject: issuer, status: 'ok', message: `metadata found; its issuer is exactly the configured one${metadata.jwks_uri ? '' : ' (it publishes no jwks_uri)'}` },
  };
}

type Failed = (message: string, fix: string, details?: readonly string[]) => IssuerCheck;

function mismatch(issuer: string, discovered: string, failed: Failed): IssuerCheck {
  const difference = describeIssuerDifference(issuer, discovered);
  return failed(
    `the metadata names another issuer: ${difference.summary}; tokens carry the metadata's spelling in "iss", so every token would be refused`,
    `set MCP_AUTH_ISSUER to exactly ${JSON.stringify(discovered)}`,
    difference.details,
  );
}

/** The most telling of the locations tried: a mismatch, then a non-JSON answer, then the last. */
function explainDiscoveryFailure(issuer: string, failures: readonly DiscoveryFailure[], timeoutMs: number, failed: Failed): IssuerCheck {
  const tried = failures.map((failure) => `GET ${failure.url}: ${failure.description}`);
  const mismatched = failures.find((failure) => failure.kind === 'issuer_mismatch' && failure.discoveredIssuer !== undefined);
  if (mismatched) {
    const difference = describeIssuerDifference(issuer, mismatched.discoveredIssuer!);
    return failed(
      `the metadata names another issuer: ${difference.summary}`,
      `set MCP_AUTH_ISSUER to exactly ${JSON.stringify(mismatched.discoveredIssuer)}, if that is the server meant`,
      [...difference.details, ...tried],
    );
  }
  const last = failures.at(-1);
  if (last === undefined) return failed('discovery failed', 'check the issuer URL (MCP_AUTH_ISSUER)');
  if (last.kind === 'unreachable') {
    return failed(`the authorization server cannot be reached: ${last.description}`, 'start the authorization server, or correct the host and port in MCP_AUTH_ISSUER', tried);
  }
  if (last.kind === 'timeout') {
    return failed(`the authorization server did not answer within ${timeoutMs} ms`, 'check that the authorization server is up and reachable from here, or raise MCP_AUTH_HTTP_TIMEOUT_MS', tried);
  }
  if (failures.every((failure) => failure.kind === 'http_status' && failure.status === 404)) {
    return failed(
      'no metadata document at either well-known location (HTTP 404): this URL is not an authorization server\'s issuer',
      'set MCP_AUTH_ISSUER to the "issuer" value of your authorization server\'s metadata (often the URL without a path, or with a tenant or realm path)',
      tried,
    );
  }
  if (failures.some((failure) => failure.kind === 'not_json')) {
    return failed(
      'the metadata location answers something that is not JSON (a web page, a login form?)',
      'set MCP_AUTH_ISSUER to the issuer identifier itself, not a web page of the authorization server',
      tried,
    );
  }
  if (last.kind === 'http_status') {
    return failed(`the metadata could not be read (HTTP ${last.status})`, 'check the authorization server: it must answer GET of its metadata with 200 and JSON', tried);
  }
  return failed(`the metadata is unusable (${last.description})`, 'check that MCP_AUTH_ISSUER names an OAuth 2.0 authorization server (RFC 8414) or an OpenID provider', tried);
}
