import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { emitWarning, type LineSink } from '../../core/kernel/log-line.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { missingPinDirectory, type PinsConfig } from '../config/pins-config.js';
import type { SharedStoreConfig } from '../config/shared-store-config.js';
import type { Upstream } from '../upstream/upstream.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';
import { createFilePinStore, PIN_FILE_SETTING, type PinStore } from './pin-store.js';
import { ToolPins, type ToolPinsOptions } from './tool-pins.js';

/**
 * Opens the pin store the settings name, as the gateway and its `pins` commands both do: the pin file (its
 * directory must exist, so that pins can be written), or the shared store under the same key prefix as the rate
 * limits (`MCP_AUTH_REDIS_KEY_PREFIX`, default `mcp-guard:<canonical resource>:`). Loaded only when pins are used:
 * ioredis is an optional dependency.
 *
 * @param resource - The canonical resource URI, for the default key prefix.
 * @throws ConfigurationError naming the setting when the pin file's directory does not exist, or ioredis is missing.
 * @example
 * const store = await openPinStore(config.pins, config.redis, resource);
 */
export async function openPinStore(pins: PinsConfig, redis: SharedStoreConfig | undefined, resource: string, onLost?: (reason: string) => void): Promise<PinStore> {
  if (pins.redis) {
    if (redis === undefined) throw new ConfigurationError(PIN_FILE_SETTING, 'is "redis" but MCP_AUTH_REDIS_URL is not set');
    const { openRedisPinStore } = await import('./redis-pin-store.js');
    return openRedisPinStore({ url: redis.url, keyPrefix: redis.keyPrefix ?? `mcp-guard:${resource}:`, ...(onLost ? { onLost } : {}) });
  }
  const file = pins.file!;
  const directory = dirname(file);
  const info = await stat(directory).catch(() => undefined);
  // Checked with the settings already; again here, as it may have been removed since.
  if (!info?.isDirectory()) throw missingPinDirectory(directory);
  return createFilePinStore(file);
}

/** What {@link startToolPins} needs besides the configuration. */
export interface StartToolPinsOptions {
  /** The canonical resource URI, for the shared store's default key prefix. */
  readonly resource: string;
  readonly log: LineSink;
  readonly warn: LineSink;
  /** Counts each mismatch (the gateway's metrics), when they are on. */
  readonly onMismatch?: ToolPinsOptions['onMismatch'];
}

/**
 * Opens the pin store and reads the pins, for a gateway with `MCP_AUTH_PINS` warn or enforce.
 *
 * @throws ConfigurationError naming `MCP_AUTH_PIN_FILE` when the pins cannot be read (a corrupt or oversized file,
 *   a directory that does not exist, an unreachable shared store): the gateway does not start.
 */
export async function startToolPins(config: GatewayConfig, options: StartToolPinsOptions): Promise<ToolPins | undefined> {
  const pins = config.pins;
  if (pins === undefined || pins.mode === 'off') return undefined;
  if (pins.file !== undefined && !pins.redis) await checkPinDirectoryWritable(pins.file, pins.mode, options.warn);
  const store = await openPinStore(pins, config.redis, options.resource, (reason) => emitWarning(options.warn, 'the shared pin store is unreachable; the pins in force are kept', { detail: reason.slice(0, 200) }));
  const toolPins = new ToolPins({ mode: pins.mode, store, log: options.log, warn: options.warn, ...(options.onMismatch ? { onMismatch: options.onMismatch } : {}) });
  try {
    await toolPins.start();
  } catch (error) {
    await toolPins.close();
    throw error;
  }
  return toolPins;
}

/**
 * Checks at start-up that the pin file's directory can be written (a pin file is replaced by a file renamed into it):
 * otherwise pins made on first sight or accepted would hold in this process only. In `enforce` that stops the
 * start-up with an error naming the setting; in `warn`, one warning.
 */
async function checkPinDirectoryWritable(file: string, mode: 'warn' | 'enforce', warn: LineSink): Promise<void> {
  const directory = dirname(file);
  const code = await access(directory, constants.W_OK).then(
    () => undefined,
    (error: NodeJS.ErrnoException) => error.code ?? 'error',
  );
  // A directory that does not exist is reported by openPinStore, with its own fix.
  if (code === undefined || code === 'ENOENT' || code === 'ENOTDIR') return;
  const problem = `is in a directory that cannot be written (${directory}: ${code}): pins made on first sight or accepted could not be kept`;
  if (mode === 'enforce') throw new ConfigurationError(PIN_FILE_SETTING, `${problem}; make it writable, or choose another file`);
  emitWarning(warn, `${PIN_FILE_SETTING} ${problem}; they hold in this process only`, { setting: PIN_FILE_SETTING });
}

/**
 * The single upstream with its tools compared with their pins (see `withToolPins`), named `upstream`.
 *
 * @example
 * const upstream = await withSingleUpstreamPins(createUpstreamProxy(options), pins);
 */
export async function withSingleUpstreamPins<U extends Upstream>(upstream: U, pins: ToolPins): Promise<U> {
  const { withToolPins } = await import('./pinned-upstream.js');
  return withToolPins(upstream, pins, SINGLE_UPSTREAM_PIN_NAME);
}

/**
 * The gateway's upstream with its `tools/call` and `tools/list` requests held while their server's start-up
 * comparison with the pins is in progress (`enforce`), each at most its list timeout (see `withStartupComparison`).
 *
 * @example
 * const upstream = await withStartupComparisonWait(proxy, pins, config);
 */
export async function withStartupComparisonWait<U extends Upstream>(upstream: U, pins: ToolPins, config: GatewayConfig): Promise<U> {
  const { withStartupComparison } = await import('./await-startup-comparison.js');
  const timeouts = new Map(config.servers?.map((server) => [server.name, server.listTimeoutMs ?? config.listTimeoutMs]));
  return withStartupComparison(upstream, {
    comparisons: pins.startup,
    ...(config.servers ? { servers: config.servers.map((server) => server.name) } : {}),
    timeoutMs: (server) => timeouts.get(server) ?? config.listTimeoutMs,
  });
}
