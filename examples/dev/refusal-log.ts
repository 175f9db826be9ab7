/**
 * Every refusal the authorization server sends a client (an error redirect or page, or a JSON error of the token or
 * registration endpoint), reported with its error code and description, so that its log says why, as the client is
 * told.
 *
 * @module
 */
import type { OAuthErrorContext, Provider } from 'oidc-provider';

/** One refusal the authorization server answered with. */
export interface AuthorizationRefusal {
  /** `authorization` (a redirect to the client, or an error page), `token` or `registration`. */
  endpoint: 'authorization' | 'token' | 'registration';
  /** The OAuth error code, e.g. `invalid_scope`, `invalid_target`, `invalid_grant`. */
  error: string;
  /** The `error_description` sent, when there is one. */
  description?: string;
  /** The client asking, when known. */
  clientId?: string;
}

/** oidc-provider's events for refusals it sends, by the endpoint each is about. */
const REFUSAL_EVENTS = {
  'authorization.error': 'authorization',
  'grant.error': 'token',
  'registration_create.error': 'registration',
} as const;

/** Calls `report` with each refusal `provider` sends; server errors are not refusals and are left out. */
export function reportRefusals(provider: Provider, report: (refusal: AuthorizationRefusal) => void): void {
  for (const [event, endpoint] of Object.entries(REFUSAL_EVENTS)) {
    provider.on(event, (...args: unknown[]) => {
      const [ctx, error] = args as [OAuthErrorContext, { error?: unknown; error_description?: unknown }];
      if (typeof error?.error !== 'string') return;
      const clientId = ctx?.oidc?.client?.clientId ?? (typeof ctx?.oidc?.params?.client_id === 'string' ? ctx.oidc.params.client_id : undefined);
      report({
        endpoint,
        error: error.error,
        ...(typeof error.error_description === 'string' ? { description: error.error_description } : {}),
        ...(clientId !== undefined ? { clientId } : {}),
      });
    });
  }
}

/** One log line for a refusal: `refused <endpoint> for client <id>: <error>: <description>`. */
export function formatRefusal(refusal: AuthorizationRefusal): string {
  const client = refusal.clientId === undefined ? '' : ` for client ${refusal.clientId}`;
  return `refused ${refusal.endpoint}${client}: ${refusal.error}${refusal.description ? `: ${refusal.description}` : ''}`;
}
