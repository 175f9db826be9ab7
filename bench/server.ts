/**
 * One benchmark server, in its own process: `bare` (Express, `express.json()`, a fixed tools/list answer) or
 * `guarded` (the same answer from a plain function handler behind `mcpOAuthGuard`).
 *
 * Usage: `node --import tsx bench/server.ts bare|guarded [issuer] [library]`, where `library` is the file URL
 * of the package entry point to benchmark (default the TypeScript source, `src/index.ts`). Talks to its parent over IPC: reports
 * `ready` with the endpoint URL once it can serve (the guarded one after issuer discovery), answers
 * `memory` with `process.memoryUsage()` after a full GC when `--expose-gc` is on, `cpu` with
 * `process.cpuUsage()` (all threads, the crypto thread pool included), exits on `stop`.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
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

async function main(): Promise<void> {
  const mode = process.argv[2] as ServerMode;
  if (mode !== 'bare' && mode !== 'guarded') throw new Error(`unknown mode ${String(mode)}`);
  const app = express();
  // Same settings for both: no ETag hashing of answers (the guard never computes one), so the bare
  // baseline is as fast as a plain Express JSON endpoint gets and the ratio is not flattered.
  app.set('etag', false);
  const { server, origin } = await listen(app);
  const url = `${origin}/mcp`;

  if (mode === 'bare') {
    app.post('/mcp', express.json(), (req, res) => {
      res.json(tools((req.body as { id?: unknown } | undefined)?.id));
    });
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
