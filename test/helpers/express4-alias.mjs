// Preloaded (`node --import`) to run the library and the examples on Express 4: every import of the bare
// specifier `express` (and `express/<subpath>`) resolves to the `express4` package (Express 4 installed
// under an alias) instead of the Express 5 the project develops with. Only ESM imports pass through these
// hooks; Express 4's own CommonJS requires are untouched, so it keeps its own dependencies.
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'express') return nextResolve('express4', context);
  if (specifier.startsWith('express/')) return nextResolve('express4' + specifier.slice('express'.length), context);
  return nextResolve(specifier, context);
}
`;

register(`data:text/javascript,${encodeURIComponent(hooks)}`);
