/**
 * What the single upstream in connected mode said of itself when the gateway opened a session there: its
 * capabilities, read from its `initialize` answer, so that the gateway's own answer to a later `initialize` from a
 * user who has not connected yet (see `lazy-sessions.ts`) offers what the upstream offers. Never its `instructions`:
 * that session was a user's, and its text may be about that user (their account, their workspace).
 */
import type { Dispatcher } from 'undici';
import { eventStreamData } from '../../../core/wire/event-stream.js';
import type { JsonRpcId } from '../../../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, mediaType } from '../../../http/media-type.js';

/** The upstream's own description of itself, from its `initialize` result. */
export interface UpstreamProfile {
  readonly capabilities: Readonly<Record<string, unknown>>;
}

/**
 * Largest profile kept, serialized, in bytes: 64 KiB. One per upstream, in memory; a larger one is ignored, and the
 * gateway's answer stays the general one.
 */
export const MAX_UPSTREAM_PROFILE_BYTES = 65_536;
/** Largest `initialize` answer read for it, in bytes: the profile and its envelope (JSON-RPC, event framing). */
const MAX_ANSWER_BYTES = 2 * MAX_UPSTREAM_PROFILE_BYTES;

/**
 * Reads the upstream's profile from its answer to `initialize` (JSON or an event stream), consuming the body. Undefined
 * when the answer is not a successful `initialize` result for `id`, or is larger than the bounds above.
 */
export async function readUpstreamProfile(answer: Dispatcher.ResponseData, id: JsonRpcId): Promise<UpstreamProfile | undefined> {
  const type = mediaType(answer.headers['content-type']);
  if (answer.statusCode < 200 || answer.statusCode >= 300 || (type !== JSON_MEDIA_TYPE && type !== EVENT_STREAM_MEDIA_TYPE)) {
    await answer.body.dump({ limit: 1 << 20 }).catch(() => undefined);
    return undefined;
  }
  const bytes = await readBounded(answer.body, MAX_ANSWER_BYTES);
  if (bytes === undefined) return undefined;
  const messages = type === JSON_MEDIA_TYPE ? [bytes.toString('utf8')] : eventStreamData(bytes);
  for (const text of messages) {
    const profile = profileOf(parse(text), id);
    if (profile !== undefined) return Buffer.byteLength(JSON.stringify(profile)) <= MAX_UPSTREAM_PROFILE_BYTES ? profile : undefined;
  }
  return undefined;
}

/** The body, or undefined when it grows past `limit` (the rest is then dropped with the stream). */
async function readBounded(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      // Leaving the loop destroys the stream: nothing more of an oversized answer is read.
      if (size > limit) return undefined;
      chunks.push(chunk as Buffer);
    }
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks);
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function profileOf(message: unknown, id: JsonRpcId): UpstreamProfile | undefined {
  if (typeof message !== 'object' || message === null || (message as { id?: unknown }).id !== id) return undefined;
  const result = (message as { result?: unknown }).result;
  if (typeof result !== 'object' || result === null) return undefined;
  const { capabilities } = result as Record<string, unknown>;
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) return undefined;
  return { capabilities: capabilities as Record<string, unknown> };
}
