/**
 * What the single upstream in connected mode said of itself when the gateway opened a session there: its
 * capabilities, read from its `initialize` answer, so that the gateway's own answer to a later `initialize` from a
 * user who has not connected yet (see `lazy-sessions.ts`) offers what the upstream offers. Never its `instructions`:
 * that session was a user's, and its text may be about that user (their account, their workspace).
 */
import type { Dispatcher } from 'undici';
import type { JsonRpcId, JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, mediaType } from '../../../http/media-type.js';
import { profileOfResult, type KeptProfile } from '../../upstream-auth/kept-profile.js';
import { findResponse, readAnswerBody } from '../answer-response.js';

/** The upstream's own description of itself, from its `initialize` result: what connected accounts keep of it. */
export type UpstreamProfile = KeptProfile;

/**
 * Largest profile kept, serialized, in bytes: 64 KiB. One per upstream, in memory; a larger one is ignored, and the
 * gateway's answer stays the general one.
 */
export const MAX_UPSTREAM_PROFILE_BYTES = 65_536;
/** Largest `initialize` answer read for it, in bytes: the profile and its envelope (JSON-RPC, event framing). */
const MAX_ANSWER_BYTES = 2 * MAX_UPSTREAM_PROFILE_BYTES;

/**
 * Reads the upstream's profile from its answer to `initialize` (JSON or an event stream) with the one reader of
 * answers the gateway asked for itself (`readAnswerBody`): an event stream is read up to the first JSON-RPC response,
 * and the rest of it cancelled. Undefined when the answer is not a successful `initialize` result for `id`, or is
 * larger than the bounds above.
 */
export async function readUpstreamProfile(answer: Dispatcher.ResponseData, id: JsonRpcId): Promise<UpstreamProfile | undefined> {
  const type = mediaType(answer.headers['content-type']);
  if (answer.statusCode < 200 || answer.statusCode >= 300 || (type !== JSON_MEDIA_TYPE && type !== EVENT_STREAM_MEDIA_TYPE)) {
    await answer.body.dump({ limit: 1 << 20 }).catch(() => undefined);
    return undefined;
  }
  let text: string;
  try {
    text = await readAnswerBody(answer.body, type, MAX_ANSWER_BYTES);
  } catch {
    return undefined;
  }
  const profile = profileOf(findResponse(type, text, id));
  return profile !== undefined && Buffer.byteLength(JSON.stringify(profile)) <= MAX_UPSTREAM_PROFILE_BYTES ? profile : undefined;
}

function profileOf(response: JsonRpcResponse | undefined): UpstreamProfile | undefined {
  return response !== undefined && 'result' in response ? profileOfResult(response.result) : undefined;
}
