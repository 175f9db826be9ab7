/**
 * The conditions part's server (`conditions.ts`), in its own process: a plain function handler behind
 * `mcpOAuthGuard` whose policy has 200 tool rules (and `*`): scopes only (`scopes`); each with the same condition
 * over the token's group and tenant claims (`conditions`); or each with a condition of its own over those claims,
 * and `*` with one that reads `mcp.name`, so is evaluated per item and per call (`distinct`). It answers `tools/list` with 1,000 tools (every one decided by a rule: 200 named,
 * the others by `*`) and `tools/call` with a small result.
 *
 * Usage: `node --import tsx bench/conditions-server.ts scopes|conditions|distinct <issuer> [library]`; reports `ready` with
 * its endpoint URL over IPC, exits on `stop`.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { JsonRpcMessage, JsonRpcResponse, PolicyDefinition } from '../src/index.js';
import type { ServerCommand, ServerReport } from './scenario.js';

/** Tools with a rule of their own; the rest of the list is decided by `*`. */
export const CONDITION_RULES = 200;
/** Tools listed. */
export const CONDITION_LIST_TOOLS = 1_000;
/** The condition of every rule in the `conditions` variant: a group and a tenant, as operators write them. */
export const BENCH_CONDITION = "'finance' in claims.groups && claims.tenant == 'acme'";
/** The claims of the token both variants are loaded with (the condition holds for it). */
export const BENCH_CLAIMS = { groups: ['staff', 'finance'], tenant: 'acme' };

/** The policy variants of the part. */
export const CONDITION_VARIANTS = ['scopes', 'conditions', 'distinct'] as const;
/** One policy variant. */
export type ConditionVariant = (typeof CONDITION_VARIANTS)[number];

/** The condition of `*` in the `distinct` variant: it reads the request, so no outcome is shared between items. */
export const BENCH_NAME_CONDITION = "mcp.name.startsWith('tool_') && 'finance' in claims.groups";

/** The policy of one variant: the same scopes, with no condition, one shared condition, or distinct ones. */
export function conditionsPolicy(variant: ConditionVariant): PolicyDefinition {
  const shared = variant === 'scopes' ? ['mcp'] : { scopes: ['mcp'], when: BENCH_CONDITION };
  const tools: Record<string, unknown> = { '*': variant === 'distinct' ? { scopes: ['mcp'], when: BENCH_NAME_CONDITION } : shared };
  for (let i = 0; i < CONDITION_RULES; i++) {
    tools[`tool_${i}`] = variant === 'distinct' ? { scopes: ['mcp'], when: `${BENCH_CONDITION} && claims.tenant != 'tenant_${i}'` } : shared;
  }
  return { requiredScopes: ['mcp'], tools } as PolicyDefinition;
}

const send = (report: ServerReport): void => void process.send?.(report);
const TOOLS = Array.from({ length: CONDITION_LIST_TOOLS }, (_, i) => ({ name: `tool_${i}`, description: `tool ${i}`, inputSchema: { type: 'object' } }));
const CALL_RESULT = { content: [{ type: 'text', text: 'ok' }] };

function handler(message: JsonRpcMessage): JsonRpcResponse | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  if (message.method === 'tools/list') return { jsonrpc: '2.0', id: message.id, result: { tools: TOOLS } };
  if (message.method === 'tools/call') return { jsonrpc: '2.0', id: message.id, result: CALL_RESULT };
  return { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } };
}

async function main(): Promise<void> {
  const [variant, issuer, library] = process.argv.slice(2);
  if (!CONDITION_VARIANTS.includes(variant as ConditionVariant)) throw new Error(`unknown variant ${String(variant)}`);
  if (!issuer) throw new Error('the issuer URL is needed');
  const app = express();
  app.set('etag', false);
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const { mcpOAuthGuard } = (await import(library ?? new URL('../src/index.js', import.meta.url).href)) as typeof import('../src/index.js');
  const router = mcpOAuthGuard({ issuer, resource: url, policy: conditionsPolicy(variant as ConditionVariant), handler });
  await router.guard.ready();
  app.use(router);
  process.on('message', (command: ServerCommand) => {
    if (command.type === 'cpu') send({ type: 'cpu', usage: process.cpuUsage() });
    else if (command.type === 'stop') {
      server.closeAllConnections();
      server.close();
      process.exit(0);
    }
  });
  send({ type: 'ready', url });
}

// Only as a program: the part imports the policy and claims from here.
if (process.argv[1]?.endsWith('conditions-server.ts') || process.argv[1]?.endsWith('conditions-server.js')) {
  main().catch((error: unknown) => {
    send({ type: 'error', message: String(error) });
    process.exit(1);
  });
}
