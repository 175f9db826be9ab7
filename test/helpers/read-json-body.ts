// The JSON-RPC message a small test upstream received: its request body, parsed.
import type { IncomingMessage } from 'node:http';

/** A received message, loosely typed for tests. */
export interface ReceivedMessage {
  readonly id?: unknown;
  readonly method?: string;
  readonly params?: Record<string, any>;
}

/**
 * Reads `req`'s body whole and parses it as JSON; undefined when empty or not JSON.
 *
 * @example
 * createServer((req, res) => void readJsonBody(req).then((message) => answer(res, message)));
 */
export async function readJsonBody(req: IncomingMessage): Promise<ReceivedMessage | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReceivedMessage) : undefined;
  } catch {
    return undefined;
  }
}
