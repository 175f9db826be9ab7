import { protectedResourceMetadataUrls } from '../../../core/kernel/canonical-resource.js';
import type { CheckResult } from './check-result.js';

/** What {@link checkResource} looks at. */
export interface ResourceSettings {
  /** The resource as configured (`MCP_AUTH_RESOURCE`) or defaulted (`http://HOST:PORT/mcp`). */
  readonly configured: string;
  /** Its canonical form (RFC 8707 §2), as the guard computed it: the audience tokens must carry. */
  readonly canonical: string;
  /** Whether it is the default, derived from HOST and PORT. */
  readonly isDefault: boolean;
  /** Extra audiences accepted (`MCP_AUTH_AUDIENCE`). */
  readonly audiences: readonly string[];
}

/**
 * The resource URL: its canonical form (lowercase scheme and host, no default port, no trailing slash, RFC 8707
 * §2 and the guard's `canonicalizeResourceUri`), which is the metadata's `resource` and the audience every token
 * must carry, and where clients find the metadata (RFC 9728 §3.1). A configured spelling that differs from it is
 * a warning: an authorization server set up with that spelling issues tokens the guard refuses.
 */
export function checkResource(resource: ResourceSettings): CheckResult {
  const base = { check: 'resource', subject: resource.canonical } as const;
  const details = [
    `tokens must carry aud ${JSON.stringify(resource.canonical)}${resource.audiences.length > 0 ? ` or one of ${resource.audiences.map((a) => JSON.stringify(a)).join(', ')}` : ''}`,
    `clients find the metadata at ${protectedResourceMetadataUrls(resource.canonical).url}`,
  ];
  if (resource.configured !== resource.canonical) {
    return {
      ...base,
      status: 'warn',
      message: `MCP_AUTH_RESOURCE is written ${JSON.stringify(resource.configured)}; its canonical form is what tokens must carry`,
      details,
      fix: `set MCP_AUTH_RESOURCE to ${JSON.stringify(resource.canonical)}, and have the authorization server issue tokens for exactly that resource`,
    };
  }
  const url = new URL(resource.canonical);
  if (resource.isDefault && url.port === '0') {
    return { ...base, status: 'warn', message: 'the default resource names port 0: tokens must name the port picked at start-up', details, fix: 'set PORT to a fixed port, or MCP_AUTH_RESOURCE to the public URL' };
  }
  return {
    ...base,
    status: 'ok',
    message: `canonical (RFC 8707)${resource.isDefault ? '; the default from HOST and PORT, so set MCP_AUTH_RESOURCE when clients reach the server by another URL' : ''}`,
    details,
  };
}
