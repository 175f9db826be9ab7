import type { CheckResult, CheckStatus } from './check-result.js';

/** The status column of the text report, as wide as its widest word. */
const STATUS_LABELS: Readonly<Record<CheckStatus, string>> = { ok: 'ok  ', warn: 'warn', fail: 'FAIL', skip: 'skip' };
/** Where a result's further lines start, under its message. */
const INDENT = ' '.repeat(6);

/**
 * The report for a terminal: one line per result (`ok`, `warn`, `FAIL` or `skip`, then the check, its subject and
 * what was found), its details and fix indented below, and a last line counting failures and warnings with the
 * exit code. Nothing in it depends on timing, so tests can compare it.
 *
 * @example
 * formatCheckReport([{ check: 'issuer', subject: 'https://as', status: 'ok', message: 'metadata found' }], 0);
 * // 'ok    issuer https://as: metadata found\n\nall checks passed (exit code 0)\n'
 */
export function formatCheckReport(results: readonly CheckResult[], exitCode: number): string {
  const lines: string[] = [];
  for (const result of results) {
    lines.push(`${STATUS_LABELS[result.status]}  ${result.check}${result.subject ? ` ${result.subject}` : ''}: ${result.message}`);
    for (const detail of result.details ?? []) lines.push(`${INDENT}${detail}`);
    if (result.fix) lines.push(`${INDENT}fix: ${result.fix}`);
  }
  lines.push('', summaryLine(results, exitCode));
  return `${lines.join('\n')}\n`;
}

/** The report for programs (`--json`): the results as they are, the counts and the exit code. */
export function checkReportJson(results: readonly CheckResult[], exitCode: number): string {
  const count = (status: CheckStatus): number => results.filter((result) => result.status === status).length;
  return `${JSON.stringify({ ok: exitCode === 0, exitCode, failures: count('fail'), warnings: count('warn'), results }, null, 2)}\n`;
}

function summaryLine(results: readonly CheckResult[], exitCode: number): string {
  const failures = results.filter((result) => result.status === 'fail').length;
  const warnings = results.filter((result) => result.status === 'warn').length;
  const counted = [plural(failures, 'failure'), plural(warnings, 'warning')].filter((text) => text !== '').join(', ');
  if (failures > 0) return `${counted}: requests would fail (exit code ${exitCode})`;
  if (warnings > 0) return `${counted}: requests would work, though not everything as meant (exit code ${exitCode}${exitCode !== 0 ? ', --strict' : ''})`;
  return `all checks passed (exit code ${exitCode})`;
}

function plural(n: number, noun: string): string {
  return n === 0 ? '' : `${n} ${noun}${n === 1 ? '' : 's'}`;
}
