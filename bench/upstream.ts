/**
 * The gateway-hop benchmark's upstream MCP server, in its own process: raw `node:http`, no framework, the
 * answers prepared at start-up. POST `/mcp` with `tools/call` gets a small JSON result, with `tools/list` the
 * 1,000-tool list (about 150 KB); both `application/json` with a `Content-Length`. `initialize` opens a session
 * (a new `Mcp-Session-Id`, which later answers repeat, as MCP SDK servers do; no state is kept), a notification
 * gets 202, anything else a JSON-RPC error. A `tools/list` of the stateless revision (`MCP-Protocol-Version:
 * 2026-07-28`) is complete and marked `cacheScope: "public"`, `ttlMs: 60000`.
 *
 * Usage: `node --import tsx bench/upstream.ts [tools=<n>] [first=<i>] [list-delay-ms=<ms>] [expect-bearer=<token>…]`:
 * by default the 1,000 tools `tool_0000` …; `tools` and `first` list `n` tools from `tool_<i>` on instead (the servers
 * part gives each of its upstreams a range of its own), and `list-delay-ms` answers every `tools/list` that much later
 * (a slow server). It ignores `Authorization`, but with `expect-bearer` (any number of times) it counts the requests
 * that carried `Bearer <token>`, for each token, reported in its `stats` (`bearers`): the connected-accounts part
 * checks with it that each gateway sent the credential it was meant to.
 * Reports `ready` with its endpoint URL over IPC, answers `stats`, exits on `stop` (see `hop-scenario.ts`).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { CALL_RESULT, LIST_SIZE, listenHop, listTools } from './hop-scenario.js';

const BEARER_ARG = 'expect-bearer=';
/** `Authorization` values counted (`expect-bearer`), in the order given. */
const EXPECTED = process.argv.slice(2).filter((arg) => arg.startsWith(BEARER_ARG)).map((arg) => `Bearer ${arg.slice(BEARER_ARG.length)}`);
const bearers = { requests: 0, matched: EXPECTED.map(() => 0) };
/** Other `name=value` arguments, as numbers. */
const args = new Map(
  process.argv
    .slice(2)
    .filter((arg) => !arg.startsWith(BEARER_ARG))
    .map((arg) => [arg.slice(0, arg.indexOf('=')), Number(arg.slice(arg.indexOf('=') + 1))] as const),
);
for (const [name, value] of args) if (!['tools', 'first', 'list-delay-ms'].includes(name) || !Number.isInteger(value) || value < 0) throw new Error(`upstream.ts: bad argument ${name}=${value}`);
const TOOLS = listTools(args.get('first') ?? 0, args.get('tools') ?? LIST_SIZE);
const LIST_DELAY_MS = args.get('list-delay-ms') ?? 0;

const JSON_HEADERS = { 'content-type': 'application/json' };
// The list answer around its id, so that each answer is two copies and no serialisation.
const LIST_HEAD = Buffer.from('{"jsonrpc":"2.0","id":');
const LIST_TAIL = Buffer.from(`,"result":${JSON.stringify({ tools: TOOLS })}}`);
const CALL_TAIL = `,"result":${JSON.stringify(CALL_RESULT)}}`;
// A 2026-07-28 list: complete, and the same for every user (the servers part's `list-public`).
const PUBLIC_LIST_TAIL = Buffer.from(`,"result":${JSON.stringify({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'public', tools: TOOLS })}}`);
// The `list-fresh` answer: the same list, with a nextCursor that changes on every answer.
const FRESH_TAIL = Buffer.from(`,"result":{"tools":${JSON.stringify(TOOLS)},"nextCursor":"`);
let freshCounter = 0;

function answer(message: { id?: unknown; method?: unknown }, stateless: boolean): { status: number; body: Buffer | string } {
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? JSON.stringify(message.id) : 'null';
  if (message.method === 'tools/call') return { status: 200, body: `{"jsonrpc":"2.0","id":${id}${CALL_TAIL}` };
  if (message.method === 'initialize') {
    return { status: 200, body: `{"jsonrpc":"2.0","id":${id},"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench-upstream","version":"1"}}}` };
  }
  if (message.method === 'tools/list') {
    const cursor = (message as { params?: { cursor?: unknown } }).params?.cursor;
    if (stateless) return { status: 200, body: Buffer.concat([LIST_HEAD, Buffer.from(id), PUBLIC_LIST_TAIL]) };
    if (cursor === 'fresh') return { status: 200, body: Buffer.concat([LIST_HEAD, Buffer.from(id), FRESH_TAIL, Buffer.from(`c${freshCounter++}"}}`)]) };
    return { status: 200, body: Buffer.concat([LIST_HEAD, Buffer.from(id), LIST_TAIL]) };
  }
  return { status: 200, body: `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"Method not found"}}` };
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST', 'content-length': '0' }).end();
    return;
  }
  if (EXPECTED.length > 0) {
    bearers.requests += 1;
    const index = EXPECTED.indexOf(req.headers.authorization ?? '');
    if (index >= 0) bearers.matched[index]! += 1;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let message: { id?: unknown; method?: unknown };
    try {
      message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof message;
    } catch {
      res.writeHead(400, { ...JSON_HEADERS, 'content-length': '0' }).end();
      return;
    }
    if (message !== null && typeof message === 'object' && !('id' in message)) {
      res.writeHead(202, { 'content-length': '0' }).end();
      return;
    }
    const { status, body } = answer(message ?? {}, req.headers['mcp-protocol-version'] === '2026-07-28');
    const session = message?.method === 'initialize' ? randomUUID() : req.headers['mcp-session-id'];
    const write = (): void => {
      res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body), ...(typeof session === 'string' ? { 'mcp-session-id': session } : {}) });
      res.end(body);
    };
    if (LIST_DELAY_MS > 0 && message?.method === 'tools/list') setTimeout(write, LIST_DELAY_MS);
    else write();
  });
});
listenHop(server, undefined, EXPECTED.length > 0 ? () => ({ bearers: { requests: bearers.requests, matched: [...bearers.matched] } }) : undefined);
