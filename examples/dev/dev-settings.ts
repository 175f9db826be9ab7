/**
 * What the development authorization server (`npm run auth-server`) and `npm run token` agree on. Development
 * only: the server listens on loopback, keeps everything in memory, and its service client's secret is this
 * well-known string so that `npm run token` works without copying a secret around.
 */

/** Default port of `npm run auth-server`; its issuer is then `http://127.0.0.1:9400`. */
export const DEV_AUTH_SERVER_PORT = 9400;

/**
 * Secret of the development server's service client (`mcp-oauth-guard-service`), which `npm run token` uses for
 * the client_credentials grant. Known on purpose: the server is for one machine's loopback, never for production.
 */
export const DEV_SERVICE_CLIENT_SECRET = 'development-only-not-a-secret';

/**
 * What to check when the development server refuses a token or a sign-in: said by `npm run token` and the SDK
 * client example alike, since both meet the same two causes (the server is down, or was started without the
 * resource asked for).
 */
export const DEV_AUTH_SERVER_HINT = 'is `npm run auth-server` running there, and was it started with this --resource?';
