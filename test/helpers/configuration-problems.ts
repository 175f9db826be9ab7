// How configuration tests read a start-up error: each problem as one `setting: detail` line, the form the error's
// message lists them in, so a test compares what an operator reads.
import assert from 'node:assert/strict';
import { ConfigurationError } from '../../src/core/kernel/errors.js';

/** `error`'s problems as `setting: detail` lines, in its order. */
export function problemLines(error: ConfigurationError): string[] {
  return error.problems.map((p) => `${p.setting}: ${p.detail}`);
}

/**
 * The problems of the {@link ConfigurationError} `load` throws, as `setting: detail` lines; fails the test when
 * `load` throws something else, or nothing (the configuration was accepted).
 *
 * @example
 * const lines = problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_LISTS: 'everything' }));
 * assert.ok(lines.some((line) => line.startsWith('MCP_AUTH_LISTS: ')));
 */
export function problemsOf(load: () => unknown): string[] {
  try {
    load();
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return problemLines(error);
  }
  assert.fail('no ConfigurationError: the configuration was accepted');
}
