import { emitWarning, type LineSink } from '../kernel/log-line.js';
import { describeOpenItems, describeUnmatchedRule, type KindCoverage, type PolicyCoverage } from './policy-coverage.js';
import type { PolicyDefinition } from './policy-definition.js';

/**
 * How a policy's coverage is logged, by the gateway (against what its upstream lists) and by the middleware
 * (against what an SDK server registered) alike: one warning per kind with items no rule covers, one per rule that
 * matches nothing (with the closest name), and the counts their summary lines carry. Names come from the server,
 * so they are clipped, and so is their number per line.
 */

/** Most names written in one warning line; the line says how many more there were. */
const MAX_NAMES_PER_LINE = 50;
/** Most "matches nothing" warnings written at once; the last says how many more there were. */
const MAX_UNMATCHED_LINES = 100;
/** Longest name written, in characters: names come from the server. */
const MAX_NAME_LENGTH = 200;

/** Protected and open items of one kind; open counts the items with an empty rule too. Null: not listed. */
export type CoverageCount = { protected: number; open: number } | null;

/** The counts a coverage summary line carries. */
export interface CoverageCounts {
  tools: CoverageCount;
  prompts: CoverageCount;
  resources: CoverageCount;
  /** Rules that match nothing listed. */
  unmatchedRules: number;
}

/** Options of {@link warnAboutCoverage}. */
export interface CoverageWarningOptions {
  /** The policy compared; undefined is the empty policy. */
  policy: PolicyDefinition | undefined;
  /** Receives each warning line (JSON). */
  warn: LineSink;
  /** Who lists the items, as the "matches nothing" sentence names it. Default `the upstream`. */
  lister?: string;
  /** Fields every warning line carries after its message (e.g. the server it is about). Default none. */
  fields?: Readonly<Record<string, unknown>>;
}

/**
 * Writes the coverage warnings: for each kind with items that no rule covers (open beyond the base scopes), one
 * line naming them; for each rule that matches nothing listed, one line with the closest name.
 */
export function warnAboutCoverage(coverage: PolicyCoverage, options: CoverageWarningOptions): void {
  const { warn, policy } = options;
  const tag = options.fields ?? {};
  for (const [kind, covered] of [['tools', coverage.tools], ['prompts', coverage.prompts], ['resources', coverage.resources]] as const) {
    if (!covered || covered.open.length === 0) continue;
    emitWarning(warn, `policy: ${describeOpenItems(kind, covered, Boolean(policy?.requiredScopes?.length))}; add a rule (or "*") under "${kind}" in the policy`, {
      ...tag,
      kind,
      ...clippedNames(covered.open),
    });
  }
  coverage.unmatchedRules.slice(0, MAX_UNMATCHED_LINES).forEach((rule, index, shown) => {
    const more = index === shown.length - 1 ? coverage.unmatchedRules.length - shown.length : 0;
    emitWarning(warn, `policy: ${describeUnmatchedRule(rule, (name) => JSON.stringify(clipName(name)), options.lister)}`, {
      ...tag,
      kind: rule.kind,
      rule: clipName(rule.name),
      ...(rule.suggestion ? { suggestion: clipName(rule.suggestion) } : {}),
      ...(more > 0 ? { more } : {}),
    });
  });
}

/** The counts of a coverage, for its summary line. */
export function coverageCounts(coverage: PolicyCoverage): CoverageCounts {
  return { tools: countOf(coverage.tools), prompts: countOf(coverage.prompts), resources: countOf(coverage.resources), unmatchedRules: coverage.unmatchedRules.length };
}

/** The first names of a list, clipped, and how many more there were: `{ names, more? }`. */
export function clippedNames(list: readonly string[]): { names: string[]; more?: number } {
  const shown = list.slice(0, MAX_NAMES_PER_LINE).map(clipName);
  return list.length > shown.length ? { names: shown, more: list.length - shown.length } : { names: shown };
}

function countOf(covered: KindCoverage | undefined): CoverageCount {
  return covered ? { protected: covered.protected.length, open: covered.open.length + covered.explicitlyOpen.length } : null;
}

function clipName(name: string): string {
  return name.length > MAX_NAME_LENGTH ? `${name.slice(0, MAX_NAME_LENGTH)}…` : name;
}
