/** Which of a server's tools an endpoint exposes; see `compileToolSelection`. */
export interface ToolSelectionDefinition {
  readonly include?: readonly string[];
  readonly exclude?: readonly string[];
}

/** Placeholder until the selection compiler lands: every pattern is a `*` glob. */
export function compileToolSelection(definition: ToolSelectionDefinition | undefined, _path: string): (name: string) => boolean {
  if (!definition) return () => true;
  const toRegExp = (glob: string): RegExp => new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  const include = definition.include?.map(toRegExp);
  const exclude = definition.exclude?.map(toRegExp) ?? [];
  return (name) => (include === undefined || include.some((r) => r.test(name))) && !exclude.some((r) => r.test(name));
}
