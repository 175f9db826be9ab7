/**
 * One benchmark server, in its own process, each answering the same fixed tools/list:
 * - `bare`: Express, `express.json()`, the answer;
 * - `guarded`: the same answer from a plain function handler behind `mcpOAuthGuard`;
 * - `floor`: `bare` plus a bare `node:crypto` ES256 signature check of the presented JWT (key from the
 *   issuer's JWKS, fetched once at start; no claims work): the least any new-token verification costs;
 * - `peer`: `bare` behind the official SDK's `requireBearerAuth`, with a verifier on jose's `jwtVerify` and
 *   `createRemoteJWKSet` (issuer, audience and algorithm checked), as an SDK user would write it.
 *
 * Usage: `node --import tsx bench/server.ts bare | guarded <issuer> [library] | floor <issuer> | peer <issuer> <audience>`,
 * where `library` is the file URL
 * of the package entry point to benchmark (default the TypeScript source, `src/index.ts`). Talks to its parent over IPC: reports
 * `ready` with the endpoint URL once it can serve (the guarded one after issuer discovery), answers
 * `memory` with `process.memoryUsage()` after a full GC when `--expose-gc` is on, `cpu` with
 * `process.cpuUsage()` (all threads, the crypto thread pool included), exits on `stop`.
 *
 * Handlers are defined once, outside any per-request closure: this file runs through tsx, whose transform
 * adds a call to every closure it creates, and the anchors must not pay a cost the guard (compiled) does not.
 */
import { createPublicKey, verify, type JsonWebKey as NodeJwk, type KeyObject } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import express from 'express';
import { createRemoteJWKSet, jwtVerify, type JWK } from 'jose';
import type { JsonRpcMessage, JsonRpcResponse } from '../src/index.js';
import { POLICY, TOOLS, type ServerCommand, type ServerMode, type ServerReport } from './scenario.js';

const send = (report: ServerReport): void => void process.send?.(report);

function tools(id: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id: typeof id === 'string' || typeof id === 'number' ? id : 0, result: { tools: TOOLS } };
}

function toolsHandler(message: JsonRpcMessage): JsonRpcResponse | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  if (message.method === 'tools/list') return tools(message.id);
  return { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } };
}

async function listen(app: express.Express): Promise<{ server: Server; origin: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The issuer's `jwks_uri`, from its RFC 8414 metadata. */
async function jwksUriOf(issuer: string): Promise<URL> {
  const response = await fetch(new URL('/.well-known/oauth-authorization-server', issuer));
  if (!response.ok) throw new Error(`issuer metadata: HTTP ${response.status}`);
  const { jwks_uri } = (await response.json()) as { jwks_uri?: string };
  if (typeof jwks_uri !== 'string') throw new Error('issuer metadata has no jwks_uri');
  return new URL(jwks_uri);
}

/** The floor's whole check: split the compact JWS, verify its ES256 signature, nothing else. */
function floorAuth(key: KeyObject): express.RequestHandler {
  // One options object for every request: the P-256 key, JOSE's raw r||s signature encoding (RFC 7518 §3.4).
  const verifyKey = { key, dsaEncoding: 'ieee-p1363' as const };
  return (req, res, next) => {
    const header = req.headers.authorization;
    const token = header !== undefined && header.startsWith('Bearer ') ? header.slice(7) : '';
    const dot = token.lastIndexOf('.');
    let valid = false;
    try {
      valid = dot > 0 && verify('sha256', Buffer.from(token.slice(0, dot)), verifyKey, Buffer.from(token.slice(dot + 1), 'base64url'));
    } catch {
      valid = false;
    }
    if (valid) next();
    else res.status(401).end();
  };
}

async function main(): Promise<void> {
  const mode = process.argv[2] as ServerMode;
  if (mode !== 'bare' && mode !== 'guarded' && mode !== 'floor' && mode !== 'peer') throw new Error(`unknown mode ${String(mode)}`);
  const app = express();
  // Same settings for both: no ETag hashing of answers (the guard never computes one), so the bare
  // baseline is as fast as a plain Express JSON endpoint gets and the ratio is not flattered.
  app.set('etag', false);
  const { server, origin } = await listen(app);
  const url = `${origin}/mcp`;

  const answer: express.RequestHandler = (req, res) => {
    res.json(tools((req.body as { id?: unknown } | undefined)?.id));
  };
  if (mode === 'bare') {
    app.post('/mcp', express.json(), answer);
  } else if (mode === 'floor') {
    const issuer = process.argv[3];
    if (!issuer) throw new Error('floor mode needs the issuer URL');
    const jwks = (await (await fetch(await jwksUriOf(issuer))).json()) as { keys: JWK[] };
    const jwk = jwks.keys.find((k) => k.alg === 'ES256');
    if (jwk === undefined) throw new Error('the issuer has no ES256 key');
    app.post('/mcp', floorAuth(createPublicKey({ key: jwk as NodeJwk, format: 'jwk' })), express.json(), answer);
  } else if (mode === 'peer') {
    const [issuer, audience] = process.argv.slice(3);
    if (!issuer || !audience) throw new Error('peer mode needs the issuer URL and the audience');
    const keySet = createRemoteJWKSet(await jwksUriOf(issuer));
    await keySet.reload();
    const verifyOptions = { issuer, audience, algorithms: ['ES256'] };
    const verifier = {
      async verifyAccessToken(token: string): Promise<AuthInfo> {
        const { payload } = await jwtVerify(token, keySet, verifyOptions);
        return {
          token,
          clientId: typeof payload['client_id'] === 'string' ? payload['client_id'] : '',
          scopes: typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [],
          ...(payload.exp === undefined ? {} : { expiresAt: payload.exp }),
        };
      },
    };
    // The guard's base scope, so both refuse the same tokens.
    app.post('/mcp', requireBearerAuth({ verifier, requiredScopes: [...(POLICY.requiredScopes ?? [])] }), express.json(), answer);
  } else {
    const issuer = process.argv[3];
    if (!issuer) throw new Error('guarded mode needs the issuer URL');
    const library = process.argv[4] ?? new URL('../src/index.js', import.meta.url).href;
    const { mcpOAuthGuard } = (await import(library)) as typeof import('../src/index.js');
    const router = mcpOAuthGuard({ issuer, resource: url, policy: POLICY, handler: toolsHandler });
    await router.guard.ready();
    app.use(router);
  }

  process.on('message', (command: ServerCommand) => {
    if (command.type === 'memory') {
      (globalThis as { gc?: () => void }).gc?.();
      send({ type: 'memory', usage: process.memoryUsage() });
    } else if (command.type === 'cpu') {
      send({ type: 'cpu', usage: process.cpuUsage() });
    } else if (command.type === 'stop') {
      server.closeAllConnections();
      server.close();
      // process.exit (not a signal) so that --cpu-prof writes its profile.
      process.exit(0);
    }
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', url });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? error.stack ?? error.message : String(error) });
  process.exit(1);
});
