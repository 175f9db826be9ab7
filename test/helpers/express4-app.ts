// Runs the notes example on Express 4, for test/express/express4.test.ts. Start it with
//   node --import ./test/helpers/express4-alias.mjs --import tsx test/helpers/express4-app.ts
// so that `express` (here and in the library) resolves to Express 4. It starts the example authorization
// server (oidc-provider), mounts mcpOAuthGuard on an Express 4 app, mints a read and a write token, and
// prints one JSON line: { url, issuer, expressVersion, expressEntry, maxBodyBytes, readToken, writeToken }. It exits when stdin closes
// (the test ended or died) or on SIGTERM/SIGINT. It refuses to start on anything but Express 4.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { startAuthorizationServer } from '../../examples/dev/authorization-server.js';
import { createNotesHandler, notesChallengeScopes, notesPolicy } from '../../examples/notes-server.js';
import { mcpOAuthGuard } from '../../src/index.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
/** Small, so the test can exceed it cheaply. */
const MAX_BODY_BYTES = 4096;

const { default: expressPackage } = (await import('express/package.json', { with: { type: 'json' } })) as { default: { version: string } };
const expressVersion = expressPackage.version;
// Where `express` really resolves (the library's `import { Router } from 'express'` resolves the same way).
const expressEntry = import.meta.resolve('express');
if (!expressVersion.startsWith('4.') || !expressEntry.includes('/node_modules/express4/')) {
  console.error(`expected Express 4 through the express4 alias, got express@${expressVersion} at ${expressEntry}`);
  process.exit(3);
}

const as = await startAuthorizationServer();
const app = express();
app.disable('x-powered-by');
const server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve, reject) => {
  server.once('listening', resolve);
  server.once('error', reject);
});
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
const router = mcpOAuthGuard({
  issuer: as.issuer,
  resource: url,
  policy: notesPolicy,
  challengeScopes: notesChallengeScopes,
  resourceName: 'Notes on Express 4',
  maxBodyBytes: MAX_BODY_BYTES,
  handler: createNotesHandler(),
});
app.use(router);
as.addResource(url, { scopes: NOTES_SCOPES });
await router.guard.ready();

const [readToken, writeToken] = await Promise.all([
  as.issueAccessToken({ resource: url, scope: 'notes:read', sub: 'alice' }),
  as.issueAccessToken({ resource: url, scope: 'notes:read notes:write', sub: 'alice' }),
]);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  await Promise.race([
    Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), as.close()]),
    new Promise((resolve) => setTimeout(resolve, 2000).unref()),
  ]);
  process.exit(0);
}
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
process.stdin.once('end', () => void stop());
process.stdin.once('close', () => void stop());
process.stdin.resume();

process.stdout.write(`${JSON.stringify({ url, issuer: as.issuer, expressVersion, expressEntry, maxBodyBytes: MAX_BODY_BYTES, readToken, writeToken })}\n`);
