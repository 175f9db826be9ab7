/**
 * What differs between a tool's pin and its definition now, field by field: which digested fields were added,
 * removed or changed, and for a schema, which properties. Never the text of a description: a changed description
 * may be exactly what a log must not spread (an injected instruction), so it is named, not quoted.
 */
import { asRecord } from '../../core/wire/as-record.js';
import type { ToolPin } from './pin-document.js';
import { canonicalJson, PINNED_FIELDS, type PinnedField, type ToolDigest } from './tool-digest.js';

/** One field of a tool that differs from its pin. */
export interface PinDifference {
  readonly field: PinnedField;
  readonly change: 'added' | 'removed' | 'changed';
  /** For a schema whose pinned form is kept: what changed in it, e.g. `property "x" added` (at most five). */
  readonly details?: readonly string[];
}

/** Most details given for one schema. */
const MAX_DETAILS = 5;

/**
 * The fields of `current` that differ from `pin`; empty when the digests are equal.
 *
 * @example
 * pinDifferences(pin, digestTool(tool)); // [{ field: 'description', change: 'changed' }]
 */
export function pinDifferences(pin: ToolPin, current: ToolDigest): PinDifference[] {
  if (pin.digest === current.digest) return [];
  const differences: PinDifference[] = [];
  for (const field of PINNED_FIELDS) {
    const before = pin.fields[field];
    const after = current.fields[field];
    if (before === after) continue;
    const change = before === undefined ? 'added' : after === undefined ? 'removed' : 'changed';
    const details = change === 'changed' && (field === 'inputSchema' || field === 'outputSchema') && pin.definition ? schemaDetails(pin.definition[field], current.definition[field]) : [];
    differences.push({ field, change, ...(details.length > 0 ? { details } : {}) });
  }
  return differences;
}

/** Property-level changes of a JSON Schema object: properties added, removed or changed, `required` changed, else other keys. */
function schemaDetails(pinned: unknown, listed: unknown): string[] {
  const before = asRecord(pinned);
  const after = asRecord(listed);
  if (before === undefined || after === undefined) return [];
  const details: string[] = [];
  const beforeProps = asRecord(before.properties) ?? {};
  const afterProps = asRecord(after.properties) ?? {};
  for (const name of Object.keys(afterProps)) if (!(name in beforeProps)) details.push(`property ${quote(name)} added`);
  for (const name of Object.keys(beforeProps)) if (!(name in afterProps)) details.push(`property ${quote(name)} removed`);
  for (const name of Object.keys(afterProps)) {
    if (name in beforeProps && canonicalJson(beforeProps[name]) !== canonicalJson(afterProps[name])) details.push(`property ${quote(name)} changed`);
  }
  if (canonicalJson(before.required ?? []) !== canonicalJson(after.required ?? [])) details.push('"required" changed');
  const others = new Set([...Object.keys(before), ...Object.keys(after)].filter((key) => key !== 'properties' && key !== 'required'));
  for (const key of others) if (canonicalJson(before[key] ?? null) !== canonicalJson(after[key] ?? null)) details.push(`${quote(key)} changed`);
  return details.length > MAX_DETAILS ? [...details.slice(0, MAX_DETAILS), `and ${details.length - MAX_DETAILS} more`] : details;
}

/** A name as a detail shows it: JSON-quoted, at most 64 characters. */
function quote(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

/**
 * One line per difference, e.g. `description changed`, `inputSchema changed: property "x" added`.
 *
 * @example
 * describeDifferences([{ field: 'description', change: 'changed' }]); // ['description changed']
 */
export function describeDifferences(differences: readonly PinDifference[]): string[] {
  return differences.map((d) => `${d.field} ${d.change}${d.details ? `: ${d.details.join(', ')}` : ''}`);
}
