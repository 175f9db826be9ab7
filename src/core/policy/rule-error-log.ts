/**
 * The warning a policy rule that could not be decided leaves in the log: one structured line per rule path at most
 * once a minute, naming the rule and a fixed category, never a claim or argument value (CEL's own messages can quote
 * them, and a rule function's error is the application's).
 */
import { emitWarning, type LineSink } from '../kernel/log-line.js';
import { WarningLimiter } from '../kernel/warning-limiter.js';
import type { RuleErrorHook } from './evaluate-policy.js';
import { ConditionEvaluationError } from './policy-condition.js';

/** How long, in milliseconds, one rule path's warning is not repeated. */
export const RULE_ERROR_WARNING_INTERVAL_MS = 60_000;
/** Most rule paths whose last warning time is remembered; past it, the oldest is forgotten. */
const MAX_REMEMBERED_PATHS = 1000;

/**
 * A {@link RuleErrorHook} writing a rate-limited warning to `warn`, then calling `then` (the application's own
 * hook, whose errors are ignored).
 *
 * @example
 * compilePolicy(definition, 'policy', { onRuleError: ruleErrorWarnings(writeWarningToStderr) });
 * // {"time":"…","event":"warning","message":"a policy rule could not be decided; the request was denied","rule":"tools.refund","setting":"policy.tools.refund","category":"no such key"}
 */
export function ruleErrorWarnings(warn: LineSink, then?: RuleErrorHook, now: () => number = Date.now): RuleErrorHook {
  const limiter = new WarningLimiter(RULE_ERROR_WARNING_INTERVAL_MS, MAX_REMEMBERED_PATHS, now);
  return (error, path) => {
    if (limiter.due(path)) {
      // `rule` as decisions name it (a refusal's data.rule, the audit record), `setting` where it is written.
      const rule = error instanceof ConditionEvaluationError && error.rule !== undefined ? error.rule : path;
      emitWarning(warn, 'a policy rule could not be decided; the request was denied', { rule, setting: path, category: ruleErrorCategory(error) });
    }
    try {
      then?.(error, path);
    } catch {
      // The application's hook is for diagnostics; it must not turn a denial into a crash.
    }
  };
}

/** The fixed category of a rule error: the condition's failure category, or that a rule function failed. */
function ruleErrorCategory(error: unknown): string {
  return error instanceof ConditionEvaluationError ? error.category : 'rule function failed';
}
