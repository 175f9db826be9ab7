/**
 * Reporting every bad setting at once. Each setting's reader still throws a `ConfigurationError` for its own
 * setting; a loader runs the readers through {@link ConfigurationProblems.check}, which keeps going, and throws
 * one error naming them all at the end. A user who fixes one setting then does not meet the next only on the
 * following start.
 */
import { ConfigurationError, type ConfigurationProblem } from './errors.js';

/**
 * The problems found so far while loading settings. The first problem of each setting is kept: a second one
 * about the same setting is almost always a consequence of the first (a missing value that a later check finds
 * missing again).
 *
 * @example
 * const problems = new ConfigurationProblems();
 * const port = problems.check(() => parseIntegerSetting(env.PORT, 'PORT', 0, 65_535));
 * const issuer = problems.check(() => parseUrlSetting(env.MCP_AUTH_ISSUER, 'MCP_AUTH_ISSUER', rules));
 * problems.throwIfAny(); // one ConfigurationError listing PORT and MCP_AUTH_ISSUER when both are wrong
 */
export class ConfigurationProblems {
  readonly #found: ConfigurationProblem[] = [];

  /**
   * Runs `read` and returns its value; when it throws a `ConfigurationError`, records that error's problems
   * (all of them, for an error that already lists several) and returns undefined. Other errors are bugs, not
   * settings, and propagate.
   */
  check<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (error) {
      if (!(error instanceof ConfigurationError)) throw error;
      for (const problem of error.problems) this.add(problem.setting, problem.detail);
      return undefined;
    }
  }

  /** Records a problem with `setting`, unless that setting already has one. */
  add(setting: string, detail: string): void {
    if (!this.#found.some((p) => p.setting === setting)) this.#found.push({ setting, detail });
  }

  /** The number of problems recorded. */
  get count(): number {
    return this.#found.length;
  }

  /** Throws one `ConfigurationError` listing every problem recorded (see `ConfigurationError.of`); nothing when there is none. */
  throwIfAny(): void {
    if (this.#found.length > 0) throw ConfigurationError.of(this.#found);
  }
}

/**
 * Runs a settings loader with a fresh {@link ConfigurationProblems} and throws one error listing every problem
 * it recorded, plus the one it threw, if it threw a `ConfigurationError` itself (a check it did not wrap).
 *
 * @example
 * const config = collectConfigurationProblems((problems) => ({
 *   port: problems.check(() => parseIntegerSetting(env.PORT, 'PORT', 0, 65_535)) ?? 8080,
 *   host: env.HOST ?? '127.0.0.1',
 * }));
 * @throws ConfigurationError naming every bad setting.
 */
export function collectConfigurationProblems<T>(load: (problems: ConfigurationProblems) => T): T {
  const problems = new ConfigurationProblems();
  const value = problems.check(() => load(problems));
  problems.throwIfAny();
  return value as T;
}
