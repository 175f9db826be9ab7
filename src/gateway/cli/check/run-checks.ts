import { createGuard } from '../../../core/guard/create-guard.js';
import { DEFAULT_HTTP_TIMEOUT_MS } from '../../../core/token/verifier-defaults.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { resolveJwtAlgorithms } from '../../../core/token/jwt-verifier.js';
import { ENV_SETTING_NAMES } from '../../../core/guard/load-options-from-env.js';
import { policyDefinitionOf } from '../../../core/policy/compile-policy.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { policyFileOf } from '../../policy/policy-coverage-report.js';
import { checkAuthorizationServer } from './check-authorization-server.js';
import { checkIntrospection } from './check-introspection.js';
import { checkIssuerMetadata, type IssuerCheck } from './check-issuer.js';
import { checkListenAddresses } from './check-listen.js';
import { checkSigningKeys } from './check-keys.js';
import { checkPolicy } from './check-policy.js';
import { checkResource } from './check-resource.js';
import { checkScopesSupported } from './check-scopes-supported.js';
import { checkSharedStore } from './check-shared-store.js';
import { checkConnectedAccounts } from './check-connected-accounts.js';
import { checkToken } from './check-token.js';
import type { CheckResult } from './check-result.js';
import { checkUpstream } from './check-upstream.js';
import { checkPins } from './check-pins.js';
import { checkConfigFile, checkServers } from './check-servers.js';
import type { PolicyDefinition } from '../../../core/policy/policy-definition.js';

/** What else {@link runChecks} checks. */
export interface RunChecksOptions {
  /**
   * An access token to verify as the gateway would (`check --token-file`), and to list an upstream that takes only
   * tokens exchanged for each caller as that caller, for its pins; it is never part of a result.
   */
  readonly token?: string;
}

/**
 * Runs every check of `mcp-oauth-guard check` on a loaded configuration, in the order of the report: the resource, the addresses it listens on, each issuer's metadata, what MCP clients require of it and its signing keys, introspection, the shared store (Redis), the upstream, the policy. The
 * issuers, Redis and the upstream are checked at the same time; each outbound call waits at most
 * `MCP_AUTH_HTTP_TIMEOUT_MS`. The guard is built from the same options as the gateway's, so its discovery, key
 * set and introspection client are the ones checked.
 * Misspelt `MCP_AUTH_*` variables never get this far: loading the settings refuses them.
 */
export async function runChecks(config: GatewayConfig, checks: RunChecksOptions = {}): Promise<CheckResult[]> {
  // The report is the check's output: the guard logs nothing of its own (a rule weighed for a tool without the
  // arguments of a call would warn that it could not be decided, where the report says it is decided per call).
  const guard = createGuard({ ...config.guard, logLevel: 'off' }, ENV_SETTING_NAMES);
  const options = guard.options;
  const timeoutMs = options.httpTimeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const algorithms = resolveJwtAlgorithms(options.algorithms);
  const introspection = options.introspection;
  const introspectionIssuer = introspection ? (introspection.issuer ?? options.issuers[0]) : undefined;

  // Started first, as they may take longest (a process to start); each settles with a line, never a rejection.
  const servers = config.servers ? checkServers({ ...config, servers: config.servers }, options.issuers, timeoutMs) : undefined;
  const upstream = servers ? undefined : checkUpstream(config, options.policy, options.issuers, timeoutMs).catch((error: unknown) => ({
    result: { check: 'upstream', status: 'fail', message: `the upstream could not be checked: ${explainFailure(error, 300)}`, fix: 'check the upstream settings' } satisfies CheckResult,
    coverage: undefined,
  }));
  // The pins (MCP_AUTH_PIN_FILE): each upstream listed again, with its tools whole.
  // An upstream that takes only tokens exchanged for each caller is listed as the caller of --token-file.
  const pins = checkPins(config, guard.resource, timeoutMs, checks.token).catch((error: unknown): CheckResult[] => [{ check: 'pins', status: 'fail', message: `the pins could not be checked: ${explainFailure(error, 300)}` }]);
  const listening = checkListenAddresses(config, { resource: guard.resource, timeoutMs });
  const sharedStore = config.redis
    ? checkSharedStore(config.redis, guard.resource, timeoutMs).catch(
        (error: unknown): CheckResult => ({ check: 'shared store', status: 'fail', message: `Redis could not be checked: ${explainFailure(error, 300)}`, fix: 'check MCP_AUTH_REDIS_URL' }),
      )
    : undefined;
  const connected = checkConnectedAccounts(config, guard.resource, timeoutMs);
  const issuers = await Promise.all(
    options.issuers.map(async (issuer, index): Promise<{ issuer: string; checked: IssuerCheck; results: CheckResult[] }> => {
      const introspects = issuer === introspectionIssuer;
      const checked = await checkIssuerMetadata(issuer, timeoutMs);
      const lines = [checked.result, checkAuthorizationServer(issuer, checked.metadata)];
      if (options.jwksUri !== undefined) {
        return { issuer, checked, results: index === 0 ? [...lines, await checkSigningKeys(options.jwksUri, algorithms, timeoutMs)] : lines };
      }
      return { issuer, checked, results: [...lines, await keysOf(issuer, checked, introspects, algorithms, timeoutMs)] };
    }),
  );
  const results: CheckResult[] = [
    ...checkConfigFile(config),
    checkResource({ configured: config.guard.resource, canonical: guard.resource, isDefault: config.resourceIsDefault, audiences: options.audiences ?? [] }),
    ...(await listening),
    ...issuers.flatMap((each) => each.results),
  ];
  if (introspection) {
    const endpoint = introspection.endpoint ?? issuers.find((each) => each.issuer === introspectionIssuer)?.checked.metadata?.introspection_endpoint;
    results.push(await checkIntrospection(guard.verifier, endpoint));
  }
  if (sharedStore) results.push(await sharedStore);
  results.push(...(await connected));
  const listed = upstream ? await upstream : { result: undefined };
  if (listed.result) results.push(listed.result);
  const file = policyFileOf(config.settings);
  if (servers) {
    // The gateway-wide policy applies to every server's names; each server's own is checked against its listing.
    results.push(...(await servers), gatewayPolicyLine(options.policy, file));
  } else {
    results.push(...checkPolicy({ policy: options.policy, file, hasUpstream: Boolean(config.proxy ?? config.stdio), ...('coverage' in listed && listed.coverage ? { coverage: listed.coverage } : {}) }));
  }
  results.push(...(await pins));
  results.push(...checkScopesSupported(options.policy, file, issuers.map(({ issuer, checked }) => ({ issuer, scopesSupported: checked.metadata?.scopes_supported }))));
  if (checks.token !== undefined) {
    // Weighed against what the upstream lists, else against the policy's own tool rules.
    const listedTools = 'catalog' in listed ? listed.catalog?.tools : undefined;
    const tools = listedTools ?? Object.keys(policyDefinitionOf(options.policy)?.tools ?? {}).filter((name) => name !== '*');
    results.push(...(await checkToken(guard, checks.token, tools)));
  }
  return results;
}

/** With several servers: the gateway-wide policy's line, where it comes from (each server's own has lines of its own). */
function gatewayPolicyLine(policy: PolicyDefinition | undefined, file: string | null): CheckResult {
  if (file !== null && policy !== undefined) return checkPolicy({ policy, file, hasUpstream: false })[0]!;
  return { check: 'policy', status: 'ok', message: 'no gateway-wide policy (MCP_AUTH_POLICY, gateway.policy): each server\'s own policy applies to its tools, prompts and resources' };
}

/** The keys line of an issuer whose JWKS is discovered. */
async function keysOf(issuer: string, checked: IssuerCheck, introspects: boolean, algorithms: readonly string[], timeoutMs: number): Promise<CheckResult> {
  if (checked.metadata === undefined) return { check: 'keys', subject: issuer, status: 'skip', message: "not checked, as the issuer's metadata was not usable (see its line)" };
  if (checked.metadata.jwks_uri !== undefined) return checkSigningKeys(checked.metadata.jwks_uri, algorithms, timeoutMs);
  if (introspects) return { check: 'keys', subject: issuer, status: 'skip', message: 'the issuer publishes no jwks_uri: its tokens are introspected' };
  return { check: 'keys', subject: issuer, status: 'fail', message: 'the issuer publishes no jwks_uri, so its JWTs cannot be verified', fix: 'set MCP_AUTH_JWKS_URI, or configure introspection (MCP_AUTH_INTROSPECTION_CLIENT_ID and its secret)' };
}
