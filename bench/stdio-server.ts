/**
 * The stdio MCP server every bridge of the stdio benchmark fronts (see `hop-stdio.ts`): newline-delimited
 * JSON-RPC on stdin and stdout, no SDK, the answers prepared at start-up, so that what is measured is the
 * bridge. `initialize`, `ping`, `tools/list` (the one tool {@link CALLED_TOOL}) and `tools/call` (the small
 * {@link CALL_RESULT}); notifications get no answer; anything else a JSON-RPC error.
 *
 * Usage: `node stdio-server.js` (transpiled beside `hop-scenario.js`), or `node --import tsx bench/stdio-server.ts`.
 */
import { CALL_RESULT, CALLED_TOOL } from './hop-scenario.js';

const PROTOCOL_VERSION = '2025-11-25';
const CALL_TAIL = `,"result":${JSON.stringify(CALL_RESULT)}}\n`;
const LIST_TAIL = `,"result":${JSON.stringify({ tools: [{ name: CALLED_TOOL, description: 'Looks up records.', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } }] })}}\n`;
const PING_TAIL = ',"result":{}}\n';

function initializeTail(requested: unknown): string {
  const result = {
    protocolVersion: typeof requested === 'string' ? requested : PROTOCOL_VERSION,
    capabilities: { tools: {} },
    serverInfo: { name: 'bench-stdio-server', version: '1.0.0' },
  };
  return `,"result":${JSON.stringify(result)}}\n`;
}

function answer(line: string): string | undefined {
  let message: { id?: unknown; method?: unknown; params?: { protocolVersion?: unknown } };
  try {
    message = JSON.parse(line) as typeof message;
  } catch {
    return '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n';
  }
  if (message.id === undefined || message.method === undefined) return undefined;
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)}`;
  switch (message.method) {
    case 'tools/call':
      return head + CALL_TAIL;
    case 'tools/list':
      return head + LIST_TAIL;
    case 'ping':
      return head + PING_TAIL;
    case 'initialize':
      return head + initializeTail(message.params?.protocolVersion);
    default:
      return `${head},"error":{"code":-32601,"message":"Method not found"}}\n`;
  }
}

let partial = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  partial += chunk;
  let out = '';
  let nl: number;
  while ((nl = partial.indexOf('\n')) !== -1) {
    const line = partial.slice(0, nl);
    partial = partial.slice(nl + 1);
    if (line.trim() !== '') out += answer(line) ?? '';
  }
  if (out !== '') process.stdout.write(out);
});
process.stdin.on('end', () => process.exit(0));
