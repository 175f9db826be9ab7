// An upstream for connected-accounts tests that keeps sessions of its own and records every request, so that a test
// can see which session each request named, with which credentials, and which sessions were ended.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listenOnLoopback } from '../../helpers/loopback-server.js';
import { readJsonBody } from '../../helpers/read-json-body.js';

const VERSION = '2025-11-25';

/** One request the upstream received. */
export interface Received {
  readonly httpMethod: string;
  readonly method: string | undefined;
  readonly sessionId: string | undefined;
  readonly authorization: string | undefined;
  /** Its `MCP-Protocol-Version` header. */
  readonly protocolVersion: string | undefined;
  /** What the upstream answered. */
  status: number;
}

/** A header's value when sent once. */
const header = (value: string | string[] | undefined): string | undefined => (typeof value === 'string' ? value : undefined);

/** Answers of one kind that a test may hold: `passed()` waits while held, `hold()` holds them until its result is called. */
function holdable(): { passed: () => Promise<void> | undefined; hold: () => () => void } {
  let held: Promise<void> | undefined;
  return {
    passed: () => held,
    hold: () => {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
  };
}

/** The running upstream of {@link startSessionUpstream}. */
export type SessionUpstream = Awaited<ReturnType<typeof startSessionUpstream>>;

/**
 * An MCP server over Streamable HTTP (2025-11-25) on 127.0.0.1 with sessions of its own, no other state, and a log of
 * what it received. It refuses a request without a bearer token (401), without a session id (400) or with one it
 * does not know (404); a DELETE ends the session it names. A test may hold its answers to `initialize` (`holdInitialize`)
 * or to `tools/call` (`holdCalls`), and refuse the next DELETEs with 401 (`refuseDeletes`).
 *
 * @example
 * const upstream = await startSessionUpstream();
 * parts.notesAs.addResource(upstream.url, { scopes: NOTES_SCOPES });
 */
export async function startSessionUpstream() {
  const sessions = new Set<string>();
  const issued: string[] = [];
  const received: Received[] = [];
  const initializeHeld = holdable();
  const callsHeld = holdable();
  const control = { refuseDeletes: 0 };
  const server = createServer((req, res) => {
    void readJsonBody(req).then(async (message) => {
      const sessionId = header(req.headers['mcp-session-id']);
      const entry: Received = { httpMethod: req.method ?? '', method: message?.method, sessionId, authorization: req.headers.authorization, protocolVersion: header(req.headers['mcp-protocol-version']), status: 0 };
      received.push(entry);
      const answer = (status: number, body?: object, headers: Record<string, string> = {}) => {
        entry.status = status;
        res.writeHead(status, body ? { 'content-type': 'application/json', ...headers } : headers).end(body ? JSON.stringify(body) : undefined);
      };
      if (!req.headers.authorization?.startsWith('Bearer ')) return answer(401, undefined, { 'www-authenticate': 'Bearer' });
      if (req.method === 'DELETE' && control.refuseDeletes > 0) {
        control.refuseDeletes--;
        return answer(401, undefined, { 'www-authenticate': 'Bearer error="invalid_token"' });
      }
      if (req.method === 'POST' && message?.method === 'initialize' && sessionId === undefined) {
        await initializeHeld.passed();
        const id = `upstream-${randomBytes(12).toString('hex')}`;
        sessions.add(id);
        issued.push(id);
        const result = { protocolVersion: VERSION, capabilities: { tools: {} }, serverInfo: { name: 'sessions', version: '1.0.0' } };
        return answer(200, { jsonrpc: '2.0', id: message.id, result }, { 'mcp-session-id': id });
      }
      if (sessionId === undefined) return answer(400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no session id' } });
      if (!sessions.has(sessionId)) return answer(404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      if (req.method === 'DELETE') {
        sessions.delete(sessionId);
        return answer(200);
      }
      if (req.method !== 'POST') return answer(405, undefined, { allow: 'POST, DELETE' });
      if (message?.id === undefined) return answer(202);
      if (message.method === 'tools/call') await callsHeld.passed();
      const result =
        message.method === 'tools/list'
          ? { tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] }
          : message.method === 'tools/call'
            ? { content: [{ type: 'text', text: `echo: ${String(message.params?.arguments?.text)}` }] }
            : {};
      return answer(200, { jsonrpc: '2.0', id: message.id, result }, { 'mcp-session-id': sessionId });
    });
  });
  const origin = await listenOnLoopback(server);
  return {
    url: `${origin}/mcp`,
    issued,
    received,
    sessions,
    /** Forgets every session, as a restarted process would. */
    restart: () => sessions.clear(),
    /** How many of the next DELETEs are refused with 401 `invalid_token`, as for a token the upstream no longer takes. */
    control,
    /** Holds every answer to `initialize` until the function returned is called. */
    holdInitialize: initializeHeld.hold,
    /** Holds every answer to `tools/call` until the function returned is called. */
    holdCalls: callsHeld.hold,
    close: () => closeServer(server),
  };
}
