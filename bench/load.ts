/**
 * The load generator, in its own process so it never shares an event loop with a server. It also hosts the
 * test issuer (RFC 8414 metadata and a JWKS of one ES256 key on 127.0.0.1), because it is the process that
 * mints the tokens; the guarded server fetches the metadata and the JWKS once, before any load.
 *
 * Driven by its parent over IPC (see `LoadCommand`): `mint` prepares a pool of never-used tokens for the
 * next new-token run (`fresh`, `floor`, `peer`; outside any measurement), `token` mints the one reused token
 * of another resource (the gateway's) and answers with the user it names (its `iss` and `sub`), `run` loads one URL
 * with autocannon and reports a summary, `probe` sends one request and answers with it and its time.
 * Every scenario builds its request the same way (a `setupRequest` that sets the Authorization header),
 * so the client-side cost is the same whichever token it carries.
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { decodeJwt } from 'jose';
import { startTestIssuer, type TestIssuer } from '../test/helpers/fake-issuer.js';
import { INITIALIZE_BODY, INITIALIZED_BODY } from './hop-scenario.js';
import { REQUEST_BODY, REQUEST_HEADERS, TOKEN_SCOPE, usesNewTokens, type LoadCommand, type LoadReport, type RunRequest, type RunSummary } from './scenario.js';

/** Tokens live 15 minutes: longer than the whole run, so none expires mid-measurement. */
const TOKEN_LIFETIME_SECONDS = 900;
/** Signatures in flight at once while minting. */
const MINT_BATCH = 512;

const send = (report: LoadReport): void => void process.send?.(report);

let issuer: TestIssuer;
let reusedToken: string | undefined;
/** Reused tokens of other resources, by resource. */
const tokensByResource = new Map<string, string>();

/** The user a token names: its `iss` and `sub` (what a gateway keys a user's stored connections by). */
function userOfToken(token: string): { issuer: string; subject: string } {
  const { iss, sub } = decodeJwt(token);
  if (typeof iss !== 'string' || typeof sub !== 'string') throw new Error('a minted token names no issuer or subject');
  return { issuer: iss, subject: sub };
}
let pool: string[] = [];
let serial = 0;

/** Requests a connection sends in one session before it takes the next (see `sessionRequests`). */
const SESSION_SEQUENCE_LENGTH = 1_000;

/** An MCP session opened for the stdio part: its id and the Authorization header of its own token. */
interface OpenSession {
  id: string;
  authorization: string;
}
/** Sessions opened by `sessions`, by URL. */
const sessionsByUrl = new Map<string, OpenSession[]>();

/**
 * A token as a new client meets the server with: its own subject and client id, never seen before, so that
 * nothing the guard keeps per caller (sessions, rate-limit counters, digests of identities) is warm for it.
 */
async function mintToken(resource: string, claims: Record<string, unknown> = {}): Promise<string> {
  const n = serial++;
  const now = Math.floor(Date.now() / 1000);
  return issuer.sign(
    {
      ...claims,
      aud: resource,
      sub: `user-${n}`,
      client_id: `client-${n}`,
      scope: TOKEN_SCOPE,
      iat: now,
      exp: now + TOKEN_LIFETIME_SECONDS,
      jti: randomUUID(),
    },
    { header: { typ: 'at+jwt' } },
  );
}

/** Tops the pool up to `count` never-sent tokens (tokens left over from a shorter run are still unused). */
async function mint(resource: string, count: number): Promise<void> {
  reusedToken ??= await mintToken(resource);
  const tokens = pool.slice();
  while (tokens.length < count) {
    const batch: Promise<string>[] = [];
    for (let i = 0; i < MINT_BATCH && tokens.length + batch.length < count; i++) batch.push(mintToken(resource));
    tokens.push(...(await Promise.all(batch)));
  }
  pool = tokens;
}

function reusedFor(resource: string | undefined): string {
  const token = resource === undefined ? reusedToken : tokensByResource.get(resource);
  if (token === undefined) throw new Error(`no token minted for ${resource ?? 'the first resource'}`);
  return token;
}

/** Opens `count` sessions at `url`, one after the other (each starts a process behind a stdio bridge). */
async function openSessions(url: string, count: number, resource: string): Promise<void> {
  const opened: OpenSession[] = [];
  sessionsByUrl.set(url, opened);
  for (let i = 0; i < count; i++) {
    const authorization = `Bearer ${await mintToken(resource)}`;
    const init = await fetch(url, { method: 'POST', headers: { ...REQUEST_HEADERS, authorization }, body: INITIALIZE_BODY, signal: AbortSignal.timeout(30_000) });
    const text = await init.text();
    const id = init.headers.get('mcp-session-id');
    if (init.status !== 200 || id === null) throw new Error(`initialize at ${url}: ${init.status} ${text.slice(0, 300)}`);
    opened.push({ id, authorization });
    const done = await fetch(url, { method: 'POST', headers: { ...REQUEST_HEADERS, authorization, 'mcp-session-id': id }, body: INITIALIZED_BODY, signal: AbortSignal.timeout(30_000) });
    await done.text();
    if (done.status >= 300) throw new Error(`notifications/initialized at ${url}: ${done.status}`);
  }
}

/**
 * A new client's first request (`firstRequest`): a session opened at `url` (initialize, then initialized), `body`
 * sent in it and timed from sending to the answer's last byte, then the session ended. Nothing the server keeps
 * per session is warm for the timed request.
 */
async function timeFirstRequest(url: string, resource: string, body: string): Promise<{ ms: number; status: number; body: string }> {
  const authorization = `Bearer ${reusedFor(resource)}`;
  const signal = AbortSignal.timeout(30_000);
  const init = await fetch(url, { method: 'POST', headers: { ...REQUEST_HEADERS, authorization }, body: INITIALIZE_BODY, signal });
  const initText = await init.text();
  const id = init.headers.get('mcp-session-id');
  if (init.status !== 200 || id === null) throw new Error(`initialize at ${url}: ${init.status} ${initText.slice(0, 300)}`);
  const headers = { ...REQUEST_HEADERS, authorization, 'mcp-session-id': id };
  const done = await fetch(url, { method: 'POST', headers, body: INITIALIZED_BODY, signal });
  await done.text();
  if (done.status >= 300) throw new Error(`notifications/initialized at ${url}: ${done.status}`);
  const start = performance.now();
  const answer = await fetch(url, { method: 'POST', headers, body, signal });
  const text = await answer.text();
  const ms = performance.now() - start;
  await fetch(url, { method: 'DELETE', headers, signal })
    .then((r) => r.text())
    .catch(() => '');
  return { ms, status: answer.status, body: text };
}

async function closeSessions(url: string): Promise<void> {
  const opened = sessionsByUrl.get(url) ?? [];
  sessionsByUrl.delete(url);
  await Promise.all(
    opened.map((s) =>
      fetch(url, { method: 'DELETE', headers: { ...REQUEST_HEADERS, authorization: s.authorization, 'mcp-session-id': s.id }, signal: AbortSignal.timeout(10_000) })
        .then((r) => r.text())
        .catch(() => ''),
    ),
  );
}

/**
 * autocannon requests giving each connection a session of its own: a connection's first request takes the
 * next session and keeps it in the connection's context for the rest of the sequence, 1,000 requests; when the
 * sequence wraps, autocannon clears the context and the connection takes the next session round the list. Not
 * longer: a sequence as long as the run (150,000 requests) made autocannon spend about 2.5 times its CPU per
 * request, and left the servers' CPU half idle, so that the sealed gateway's figures measured the load generator.
 */
function sessionRequests(url: string): Array<{ setupRequest: (req: Record<string, any>, context: Record<string, unknown>) => Record<string, any> }> {
  const opened = sessionsByUrl.get(url);
  if (opened === undefined || opened.length === 0) throw new Error(`no sessions opened at ${url}`);
  let next = 0;
  const request = {
    setupRequest: (req: Record<string, any>, context: Record<string, unknown>): Record<string, any> => {
      const session = (context.session ??= opened[next++ % opened.length]) as OpenSession;
      req.headers = { ...req.headers, authorization: session.authorization, 'mcp-session-id': session.id };
      return req;
    },
  };
  return new Array<typeof request>(SESSION_SEQUENCE_LENGTH).fill(request);
}

async function run(request: RunRequest): Promise<RunSummary> {
  // With a session per connection, each session's own token is sent instead.
  const fixed = request.sessions ? '' : `Bearer ${reusedFor(request.tokenResource)}`;
  let next = 0;
  let exhausted = false;
  const tokens = pool;
  const fresh = usesNewTokens(request.scenario);
  const authorization =
    fresh
      ? (): string => {
          if (next >= tokens.length) {
            exhausted = true;
            next = 0;
          }
          return `Bearer ${tokens[next++]}`;
        }
      : (): string => fixed;
  const result = await autocannon({
    url: request.url,
    method: 'POST',
    headers: { ...REQUEST_HEADERS, ...request.headers },
    body: request.body ?? REQUEST_BODY,
    connections: request.connections,
    pipelining: 1,
    duration: request.durationSeconds,
    requests: request.sessions
      ? sessionRequests(request.url)
      : [
          {
            setupRequest: (req) => {
              req.headers = { ...req.headers, authorization: authorization() };
              return req;
            },
          },
        ],
  });
  if (fresh) pool = exhausted ? tokens : tokens.slice(next); // never reuse a token
  return {
    scenario: request.scenario,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    totalRequests: result.requests.total,
    bytesPerSecond: result.throughput.average,
    non2xx: result.non2xx,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([status, { count }]) => [status, count])),
    errors: result.errors,
    timeouts: result.timeouts,
    ...(fresh ? { tokensUsed: exhausted ? tokens.length : next, tokensExhausted: exhausted } : {}),
  };
}

async function handle(command: LoadCommand): Promise<void> {
  switch (command.type) {
    case 'mint': {
      const start = performance.now();
      try {
        await mint(command.resource, command.count);
        send({ type: 'minted', id: command.id, count: pool.length, ms: Math.round(performance.now() - start) });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    }
    case 'token':
      try {
        if (!tokensByResource.has(command.resource)) tokensByResource.set(command.resource, await mintToken(command.resource, command.claims));
        send({ type: 'token', id: command.id, ...userOfToken(tokensByResource.get(command.resource)!) });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    case 'run':
      try {
        send({ type: 'result', id: command.id, summary: await run(command.run) });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    case 'sessions':
      try {
        await openSessions(command.url, command.count, command.tokenResource);
        send({ type: 'sessions', id: command.id, count: command.count });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    case 'firstRequest':
      try {
        send({ type: 'firstAnswered', id: command.id, ...(await timeFirstRequest(command.url, command.tokenResource, command.body)) });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    case 'closeSessions':
      await closeSessions(command.url);
      send({ type: 'sessions', id: command.id, count: 0 });
      return;
    case 'probe':
      try {
        const session = command.session ? sessionsByUrl.get(command.url)?.[0] : undefined;
        if (command.session && session === undefined) throw new Error(`no sessions opened at ${command.url}`);
        const start = performance.now();
        const response = await fetch(command.url, {
          method: 'POST',
          headers: {
            ...REQUEST_HEADERS,
            ...command.headers,
            ...(session ? { authorization: session.authorization, 'mcp-session-id': session.id } : { authorization: `Bearer ${reusedFor(command.tokenResource)}` }),
          },
          body: command.body ?? REQUEST_BODY,
        });
        const body = await response.text();
        send({ type: 'probed', id: command.id, status: response.status, body, ms: performance.now() - start });
      } catch (error) {
        send({ type: 'error', id: command.id, message: String(error) });
      }
      return;
    case 'stop':
      await issuer.close();
      process.exit(0);
  }
}

async function main(): Promise<void> {
  issuer = await startTestIssuer({ algs: ['ES256'] });
  process.on('message', (command: LoadCommand) => void handle(command));
  process.on('disconnect', () => process.exit(0));
  send({ type: 'issuer', issuer: issuer.issuer });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: String(error) });
  process.exit(1);
});
