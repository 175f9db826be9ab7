/**
 * Whether the connections already in the token store open with the configured keys: a gateway restarted with another
 * `MCP_AUTH_TOKEN_STORE_SECRET` finds every record there unreadable, and each user is silently asked to connect
 * again. A few `conn:` records are sampled, never the whole store, within a bounded time, so that start-up and
 * `check` can say so.
 */
import { waitBounded } from '../../../core/kernel/bounded-wait.js';
import { emitWarning, type LineSink } from '../../../core/kernel/log-line.js';
import type { RecordSealer } from './record-sealer.js';
import type { TokenStore } from './token-store.js';

/** Most connection records the probe reads and tries to open. */
export const STORED_CONNECTIONS_SAMPLE = 5;
/** Longest the probe waits for the store, in milliseconds: 2 seconds. */
export const STORED_CONNECTIONS_PROBE_TIMEOUT_MS = 2_000;

/** What the probe found. */
export interface StoredConnectionsProbe {
  /** Connection records read (at most {@link STORED_CONNECTIONS_SAMPLE}). */
  readonly sampled: number;
  /** How many of them opened with the configured keys; the probe stops at the first that does. */
  readonly opened: number;
}

/** Options of {@link probeStoredConnections}. */
export interface StoredConnectionsProbeOptions {
  /** Most records read. Default {@link STORED_CONNECTIONS_SAMPLE}. */
  readonly sample?: number;
  /** Longest wait, in milliseconds. Default {@link STORED_CONNECTIONS_PROBE_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/** The text that says what a store whose connections do not open means, and what to do: for the log and `check`. */
export const STORED_CONNECTIONS_DO_NOT_OPEN =
  'the token store holds connections, and none of those sampled opens with MCP_AUTH_TOKEN_STORE_SECRET: it is not the key they were sealed with, so every user will be asked to connect again';

/** How to change the key without losing the connections, for the log and `check`. */
export const STORE_KEY_ROTATION_HINT =
  "give the key the connections were sealed with; to change keys, set MCP_AUTH_TOKEN_STORE_SECRET to 'new,old' (the first key seals, every key listed opens) until the old records are rewritten";

/**
 * Samples the connection records (`conn:` keys) of `store` and tries to open them with `sealer`. Resolves undefined
 * when the store did not answer in time or failed: the probe then says nothing, and the store's own checks speak.
 *
 * @example
 * const probe = await probeStoredConnections(store, sealer);
 * if (probe && probe.sampled > 0 && probe.opened === 0) warn(STORED_CONNECTIONS_DO_NOT_OPEN);
 */
export async function probeStoredConnections(store: TokenStore, sealer: RecordSealer, options: StoredConnectionsProbeOptions = {}): Promise<StoredConnectionsProbe | undefined> {
  const sample = options.sample ?? STORED_CONNECTIONS_SAMPLE;
  try {
    const end = await waitBounded(sampleConnections(store, sealer, sample), { timeoutMs: options.timeoutMs ?? STORED_CONNECTIONS_PROBE_TIMEOUT_MS });
    return end.ended === 'settled' ? end.value : undefined;
  } catch {
    return undefined;
  }
}

async function sampleConnections(store: TokenStore, sealer: RecordSealer, sample: number): Promise<StoredConnectionsProbe> {
  let sampled = 0;
  for (const key of await store.keys('conn:', sample)) {
    const sealed = await store.get(key);
    // Gone since it was listed (disconnected, revoked): not a sample.
    if (sealed === undefined) continue;
    sampled++;
    if ((await sealer.open(key, sealed)) !== undefined) return { sampled, opened: 1 };
  }
  return { sampled, opened: 0 };
}

/**
 * At start-up: one warning on `warn` when the store holds connections and none of those sampled opens, naming
 * `MCP_AUTH_TOKEN_STORE_SECRET` and how keys rotate. Nothing otherwise, nor when the store does not answer in time.
 */
export async function warnWhenStoredConnectionsDoNotOpen(store: TokenStore, sealer: RecordSealer, warn: LineSink, options?: StoredConnectionsProbeOptions): Promise<void> {
  const probe = await probeStoredConnections(store, sealer, options);
  if (probe === undefined || probe.sampled === 0 || probe.opened > 0) return;
  emitWarning(warn, STORED_CONNECTIONS_DO_NOT_OPEN, { setting: 'MCP_AUTH_TOKEN_STORE_SECRET', sampled: probe.sampled, fix: STORE_KEY_ROTATION_HINT });
}
