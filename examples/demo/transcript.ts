/**
 * The demo client's transcript: one event per step of the OAuth flow and of each MCP call, printable as a few
 * readable lines. Tokens, codes and secrets only ever appear in it redacted ({@link redactToken}).
 *
 * @module
 */

/** Stable name of a step of the flow, e.g. `challenge`, `resource-metadata`, `token`. */
export type TranscriptStep =
  | 'probe'
  | 'challenge'
  | 'resource-metadata'
  | 'authorization-server'
  | 'registration'
  | 'authorization-url'
  | 'user'
  | 'callback'
  | 'token'
  | 'refresh'
  | 'mcp'
  | 'step-up';

/** One line of the flow's transcript. Data never contains an unredacted token, code or secret. */
export interface TranscriptEvent {
  /** Stable step name, e.g. `challenge`, `resource-metadata`, `token`. */
  step: TranscriptStep;
  /** One human-readable sentence. */
  message: string;
  /** Structured details (already redacted). */
  data?: Record<string, unknown>;
}

/** How the parts of the flow report a step: the client turns each call into a {@link TranscriptEvent}. */
export type EmitTranscript = (step: TranscriptStep, message: string, data?: Record<string, unknown>) => void;

/** First 6 characters of a secret followed by `…`: enough to tell tokens apart, useless to replay. */
export function redactToken(token: string | undefined): string {
  if (!token) return '(none)';
  return `${token.slice(0, 6)}…`;
}

/** Prints a transcript event as a few readable lines. */
export function formatTranscriptEvent(event: TranscriptEvent): string {
  const head = `[${event.step}] ${event.message}`;
  if (!event.data) return head;
  const body = JSON.stringify(event.data, null, 2)
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
  return `${head}\n${body}`;
}
