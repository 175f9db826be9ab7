/**
 * The anchor of the stdio benchmark, in its own process: a bare per-session bridge from Streamable HTTP to a
 * stdio MCP server, the floor for any such bridge. `initialize` without a session starts one child process
 * (`<command> <args…>`) and answers with a new `Mcp-Session-Id`; a request naming the session goes to its
 * child's stdin as one line, and the child's answer line with the same id comes back as `application/json`;
 * notifications and responses get 202; DELETE stops the child. No authentication, no policy, no id
 * rewriting, no timeouts, no event streams, no log.
 *
 * Usage: `node --import tsx bench/stdio-bridge.ts <command> [args…]`. Reports `ready` with its endpoint URL
 * over IPC, answers `stats`, exits on `stop` (see `hop-scenario.ts`).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { listenHop } from './hop-scenario.js';

const [command, ...args] = process.argv.slice(2);
if (!command) throw new Error('usage: stdio-bridge.ts <command> [args…]');

interface Session {
  child: ChildProcessByStdio<Writable, Readable, null>;
  /** Answers waiting, by the JSON text of the request id. */
  waiting: Map<string, ServerResponse>;
}

const sessions = new Map<string, Session>();

function startSession(): string {
  const id = randomUUID();
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const session: Session = { child, waiting: new Map() };
  let partial = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let message: { id?: unknown };
      try {
        message = JSON.parse(line) as typeof message;
      } catch {
        continue;
      }
      const key = JSON.stringify(message.id);
      const res = session.waiting.get(key);
      if (res === undefined) continue;
      session.waiting.delete(key);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(line), ...(res.req.headers['mcp-session-id'] ? {} : { 'mcp-session-id': id }) });
      res.end(line);
    }
  });
  child.once('exit', () => {
    sessions.delete(id);
    for (const res of session.waiting.values()) res.writeHead(502, { 'content-length': '0' }).end();
  });
  sessions.set(id, session);
  return id;
}

const server = createServer((req, res) => {
  const named = req.headers['mcp-session-id'];
  const sessionId = typeof named === 'string' ? named : undefined;
  if (req.method === 'DELETE') {
    const session = sessionId === undefined ? undefined : sessions.get(sessionId);
    session?.child.kill();
    res.writeHead(session ? 200 : 404, { 'content-length': '0' }).end();
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST, DELETE', 'content-length': '0' }).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let message: { id?: unknown; method?: unknown };
    try {
      message = JSON.parse(body) as typeof message;
    } catch {
      res.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    const id = sessionId ?? (message.method === 'initialize' ? startSession() : undefined);
    const session = id === undefined ? undefined : sessions.get(id);
    if (session === undefined) {
      res.writeHead(sessionId === undefined ? 400 : 404, { 'content-length': '0' }).end();
      return;
    }
    if (message.id !== undefined && message.method !== undefined) session.waiting.set(JSON.stringify(message.id), res);
    else res.writeHead(202, { 'content-length': '0' }).end();
    // One line: the body as received, newlines (only ever whitespace in JSON) removed.
    session.child.stdin.write(`${body.includes('\n') ? body.replace(/[\r\n]+/g, ' ') : body}\n`);
  });
});

listenHop(server, () => {
  for (const session of sessions.values()) session.child.kill();
});
