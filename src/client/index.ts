/**
 * Entry point `mcp-oauth-guard/client`: what an MCP client needs to sign in with OAuth to a server this package
 * protects. The official MCP TypeScript SDK client (1.x, an optional peer dependency) runs the OAuth flow itself;
 * it asks the application for an `OAuthClientProvider` (here {@link LoopbackOAuthClientProvider}, in memory) and a
 * way back for the user (a {@link LoopbackRedirectListener} on 127.0.0.1). {@link signInToDevelopmentServer} is
 * a scripted user for the development authorization server, for tests and demos only. Loads neither Express nor
 * the SDK: the SDK appears in types only. Re-exports only.
 *
 * @module mcp-oauth-guard/client
 */
export { AuthorizationRedirectError } from './authorization-redirect-error.js';
export { createCookieJar, type CookieJar } from './cookie-jar.js';
export { signInToDevelopmentServer, type DevelopmentSignInOptions, type DevelopmentSignInStep } from './development-sign-in.js';
export { InMemoryOAuthClientProvider, type ClientMetadataOverrides } from './in-memory-oauth-client-provider.js';
export { LoopbackOAuthClientProvider, type LoopbackOAuthClientProviderOptions, type SendUserToSignIn } from './loopback-oauth-client-provider.js';
export { LoopbackRedirectListener, type LoopbackRedirectListenerOptions } from './loopback-redirect-listener.js';
