import assert from 'node:assert/strict';
import type { DecisionReason } from '../../src/core/kernel/decision.js';
import type { GuardError } from '../../src/core/kernel/errors.js';

/**
 * Awaits `promise` (or calls `fn`) and asserts it fails with exactly `errorClass`, `reason` and `status`.
 * Returns the error for further checks.
 */
export async function assertGuardError<E extends GuardError>(
  action: Promise<unknown> | (() => unknown),
  errorClass: new (...args: never[]) => E,
  reason: DecisionReason,
  status: number,
): Promise<E> {
  let caught: unknown;
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught !== undefined, `expected ${errorClass.name} (${reason}), but nothing was thrown`);
  assert.ok(caught instanceof errorClass, `expected ${errorClass.name}, got ${String((caught as Error)?.name)}: ${String((caught as Error)?.message)}`);
  const error = caught as E;
  assert.equal(error.constructor, errorClass);
  assert.equal(error.reason, reason, `reason (message: ${error.message})`);
  assert.equal(error.status, status);
  return error;
}
