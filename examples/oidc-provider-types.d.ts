/**
 * The slice of oidc-provider 9's API that the demo authorization server uses.
 *
 * oidc-provider ships no TypeScript declarations and the project does not depend on
 * `@types/oidc-provider`, so strict mode would reject the import. Only what
 * `examples/authorization-server.ts` touches is declared here, checked against
 * `node_modules/oidc-provider/lib` (provider.js, models/*.js, helpers/errors.js).
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  /** Storage adapter contract (lib/adapters/memory_adapter.js shows the reference one). */
  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export interface AdapterPayload {
    [key: string]: unknown;
    grantId?: string;
    uid?: string;
    userCode?: string;
    consumed?: number;
  }

  export interface ClientMetadata {
    [key: string]: unknown;
    client_id: string;
  }

  export interface Client {
    readonly clientId: string;
    readonly applicationType?: string;
    readonly clientAuthMethod: string;
    readonly clientName?: string;
    readonly scope?: string;
    grantTypeAllowed(type: string): boolean;
    metadata(): ClientMetadata;
  }

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'opaque' | 'jwt';
    jwt?: { sign?: { alg?: string; kid?: string } };
  }

  export interface ResourceServer extends ResourceServerInfo {
    identifier(): string;
  }

  export interface AccessTokenInit {
    accountId?: string;
    client: Client;
    scope?: string;
    resourceServer?: ResourceServer;
    gty?: string;
    expiresIn?: number;
    iat?: number;
    exp?: number;
    extra?: Record<string, unknown>;
  }

  export interface AccessToken {
    readonly jti: string;
    save(): Promise<string>;
  }

  export interface Grant {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export interface InteractionPromptDetails {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
    [key: string]: unknown;
  }

  export interface Interaction {
    readonly uid: string;
    readonly prompt: { name: string; reasons: string[]; details: InteractionPromptDetails };
    readonly params: Record<string, unknown> & { client_id?: string; scope?: string };
    readonly session?: { accountId?: string };
    readonly grantId?: string;
  }

  export interface InteractionResults {
    login?: { accountId: string; [key: string]: unknown };
    consent?: { grantId?: string; [key: string]: unknown };
    error?: string;
    error_description?: string;
    [key: string]: unknown;
  }

  export interface Account {
    accountId: string;
    claims(use: string, scope: string): Promise<Record<string, unknown>> | Record<string, unknown>;
  }

  export type Configuration = Record<string, unknown>;

  export class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: InteractionResults,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    urlFor(name: string, options?: Record<string, unknown>): string;
    on(event: string, listener: (...args: unknown[]) => void): this;
    readonly Client: { find(id: string): Promise<Client | undefined> };
    readonly Grant: {
      new (init: { accountId: string; clientId: string }): Grant;
      find(id: string): Promise<Grant | undefined>;
    };
    readonly AccessToken: { new (init: AccessTokenInit): AccessToken };
    readonly ResourceServer: { new (identifier: string, info: ResourceServerInfo): ResourceServer };
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidRequest: new (description?: string) => Error;
  };

  export default Provider;
}
