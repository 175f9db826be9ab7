/**
 * Memory per cached token, in its own process (run with `--expose-gc`): a real `createTokenVerifier`
 * against a loopback test issuer verifies N distinct valid tokens of about 6 KB each (large claims, as
 * identity providers send group lists), and the heap growth after a full GC, divided by N, is set beside the
 * token's size and the cache's own estimate of an entry (`estimateIdentityBytes`, what `tokenCache.maxBytes`
 * counts). The cache is made large enough that nothing is evicted (checked: the first token is still cached).
 *
 * Usage: `node --expose-gc --import tsx bench/cache-memory.ts <count> [library]`, where `library` is the file
 * URL of the package entry point (its `core/token/create-token-verifier.js` sibling is loaded, or
 * `core/create-token-verifier.js` in builds from before core had folders: the estimate is not public API). Reports `{ type: 'cache-memory', result }` to its parent over IPC, then exits.
 */
import { randomUUID } from 'node:crypto';
import { startTestIssuer } from '../test/helpers/fake-issuer.js';

/** What the parent gets. */
export interface CacheMemoryResult {
  tokens: number;
  /** Mean token length, in characters (bytes: compact JWS is ASCII). */
  tokenBytes: number;
  /** Mean decoded payload (claims JSON) length, in bytes. */
  claimsBytes: number;
  /** Heap growth per cached token after a full GC, in bytes. */
  measuredBytesPerToken: number;
  /** The cache's own estimate per entry (`estimateIdentityBytes`), in bytes. */
  estimatedBytesPerToken: number;
  /** measured / estimated. */
  measuredOverEstimate: number;
  /** RSS growth per token, in bytes (information: RSS also moves with the allocator). */
  rssBytesPerToken: number;
}

/** Messages to the parent. */
export type CacheMemoryReport = { type: 'cache-memory'; result: CacheMemoryResult } | { type: 'error'; message: string };

const send = (report: CacheMemoryReport): void => void process.send?.(report);

/** Group ids per token: about 6 KB of compact JWS in all. */
const GROUPS = 105;
/** Verifications in flight at once (the cache sees them one by one anyway). */
const BATCH = 64;

type VerifierModule = typeof import('../src/core/token/create-token-verifier.js');

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with --expose-gc');
  // Twice: the first pass may leave weakly held and finalizable objects for the next.
  collect();
  collect();
}

/** Decoded length of a compact JWS's payload segment: the claims' JSON, in bytes. */
function payloadLength(token: string): number {
  const start = token.indexOf('.') + 1;
  return Math.floor(((token.indexOf('.', start) - start) * 3) / 4);
}

async function main(): Promise<void> {
  const count = Number(process.argv[2]);
  if (!Number.isInteger(count) || count < 1) throw new Error('usage: cache-memory.ts <count> [library]');
  const library = process.argv[3];
  // An earlier build (a library URL) may keep the module at the top of core/, where it was before core's groups.
  const moduleUrl = library === undefined ? new URL('../src/core/token/create-token-verifier.js', import.meta.url) : new URL('./core/token/create-token-verifier.js', library);
  const loaded = await import(moduleUrl.href).catch((error: NodeJS.ErrnoException) => {
    if (library === undefined || error.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return import(new URL('./core/create-token-verifier.js', library).href);
  });
  const { createTokenVerifier, estimateIdentityBytes } = loaded as VerifierModule;

  const issuer = await startTestIssuer({ algs: ['ES256'] });
  const resource = 'http://127.0.0.1:1/mcp';
  const now = Math.floor(Date.now() / 1000);
  const mint = (n: number): Promise<string> =>
    issuer.sign(
      {
        aud: resource,
        sub: `user-${n}`,
        client_id: `client-${n % 10}`,
        scope: 'mcp notes:read',
        iat: now,
        exp: now + 900,
        jti: randomUUID(),
        name: `User Number ${n}`,
        email: `user-${n}@example.com`,
        groups: Array.from({ length: GROUPS }, () => randomUUID()),
      },
      { header: { typ: 'at+jwt' } },
    );
  const tokens: string[] = [];
  while (tokens.length < count) {
    const batch = Array.from({ length: Math.min(512, count - tokens.length) }, (_, i) => mint(tokens.length + i));
    tokens.push(...(await Promise.all(batch)));
  }

  // Large enough for every token: what is measured is an entry, not the bound.
  const verifier = createTokenVerifier({ issuer: issuer.issuer, resource, tokenCache: { maxEntries: count + 10, maxBytes: 2 ** 31 } });
  await verifier.ready();
  await verifier.verify(await mint(-1)); // JWKS, key import and JIT outside the measurement

  gc();
  const before = process.memoryUsage();
  // A JWT enters the cache on its second use: each batch is verified until every token of it is cached (twice,
  // unless a token's first use was forgotten before its second).
  for (let i = 0; i < count; i += BATCH) {
    const batch = tokens.slice(i, i + BATCH);
    for (let pass = 0; pass < 4 && batch.some((token) => verifier.cached?.(token) === undefined); pass++) {
      await Promise.all(batch.map((token) => verifier.verify(token)));
    }
  }
  gc();
  const after = process.memoryUsage();
  const held = tokens.filter((token) => verifier.cached?.(token) !== undefined).length;
  if (held !== count) throw new Error(`${count - held} of ${count} tokens are not cached: the measurement would undercount`);

  let tokenChars = 0;
  let claims = 0;
  let estimated = 0;
  for (const token of tokens) {
    tokenChars += token.length;
    claims += payloadLength(token);
    estimated += estimateIdentityBytes(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as unknown);
  }
  // A library whose estimate takes other arguments (BENCH_LIBRARY of another version) must not pass for a figure.
  if (!Number.isFinite(estimated)) throw new Error("this library's estimateIdentityBytes does not take the claims; no estimate to compare");
  const measured = (after.heapUsed - before.heapUsed) / count;
  send({
    type: 'cache-memory',
    result: {
      tokens: count,
      tokenBytes: Math.round(tokenChars / count),
      claimsBytes: Math.round(claims / count),
      measuredBytesPerToken: Math.round(measured),
      estimatedBytesPerToken: Math.round(estimated / count),
      measuredOverEstimate: Math.round((measured / (estimated / count)) * 100) / 100,
      rssBytesPerToken: Math.round((after.rss - before.rss) / count),
    },
  });
  await issuer.close();
  process.exit(0);
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
