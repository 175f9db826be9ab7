// The published entry points: what each exports, what none exports, which layers import what, and that
// every type named in an exported signature can be imported from some entry point.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { types?: string }> };
/** Each entry point (`mcp-oauth-guard`, `mcp-oauth-guard/core`, …) with its source file, from package.json `exports`. */
const ENTRY_SOURCES = new Map(
  Object.entries(PACKAGE.exports).flatMap(([subpath, target]) =>
    typeof target === 'object' && target.types ? [[join(PACKAGE.name, subpath), target.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts')] as const] : [],
  ),
);
const ENTRIES = [...ENTRY_SOURCES.values()];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const importsOf = (file: string): string[] =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^\s*(?:import|export)[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);

test('the main entry is the middleware API; CLI internals are exported nowhere', async () => {
  const main = await import('../../src/index.js');
  for (const name of ['mcpOAuthGuard', 'createRequestPipeline', 'httpHandler', 'fetchHandler', 'loadOptionsFromEnv', 'dispatchTable', 'ConfigurationError', 'RateLimitedError', 'jsonRpcError']) {
    assert.equal(typeof (main as Record<string, unknown>)[name], 'function', name);
  }
  const entries = [main, await import('../../src/core/index.js'), await import('../../src/gateway/index.js')];
  for (const name of ['parseGatewayArgs', 'GATEWAY_SETTINGS', 'ENV_SETTING_NAMES', 'gatewayHelp', 'ASYMMETRIC_ALGORITHMS']) {
    for (const entry of entries) assert.equal(name in entry, false, name);
  }
  const gateway = await import('../../src/gateway/index.js');
  for (const name of ['startGateway', 'loadGatewayConfig', 'createUpstreamProxy', 'createRequestLog', 'tuneHeapForProxying']) assert.equal(typeof (gateway as Record<string, unknown>)[name], 'function', name);
  const core = await import('../../src/core/index.js');
  for (const name of ['createGuard', 'compilePolicy', 'createResponseFilter', 'createSessionRegistry', 'createEventStreamRewriter']) assert.equal(typeof (core as Record<string, unknown>)[name], 'function', name);
  const http = await import('../../src/http/index.js');
  for (const name of ['createRequestPipeline', 'httpHandler', 'fetchHandler', 'answerClientErrors', 'decisionRequestOf', 'filterListResponse']) assert.equal(typeof (http as Record<string, unknown>)[name], 'function', name);
  const metrics = await import('../../src/metrics/index.js');
  assert.equal(typeof metrics.createGuardMetrics, 'function');
});

test('prom-client is loaded only by the metrics entry and the gateway\'s metrics, never by core or the main entry', () => {
  // Type-only imports are erased: they load nothing.
  const loads = (file: string): boolean => /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'prom-client'/m.test(readFileSync(join(ROOT, file), 'utf8'));
  const importers = sourceFiles('src').filter(loads);
  for (const file of importers) {
    assert.ok(file.startsWith(join('src', 'metrics')) || file === join('src', 'gateway', 'server', 'gateway-metrics.ts'), `${file} imports prom-client`);
  }
  // Nothing the main or core entry reaches may import the metrics code: follow relative imports from both.
  for (const entry of ['src/index.ts', 'src/core/index.ts', 'src/http/index.ts']) {
    const seen = new Set<string>();
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      assert.ok(!file.startsWith(join('src', 'metrics')) && !file.endsWith('gateway-metrics.ts'), `${entry} reaches ${file}`);
      for (const spec of importsOf(file)) if (spec.startsWith('.')) walk(join(dirname(file), spec.replace(/\.js$/, '.ts')));
    };
    walk(join(entry));
  }
});

test('ioredis and rate-limiter-flexible are loaded only by src/redis, by dynamic import: nobody without a Redis URL loads them', () => {
  const loadsStatically = (file: string): boolean => /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(?:ioredis|rate-limiter-flexible)'/m.test(readFileSync(join(ROOT, file), 'utf8'));
  assert.deepEqual(sourceFiles('src').filter(loadsStatically), []);
  const dynamic = sourceFiles('src').filter((file) => /import\('(?:ioredis|rate-limiter-flexible)'\)/.test(readFileSync(join(ROOT, file), 'utf8')));
  assert.deepEqual(dynamic, [join('src', 'redis', 'redis-connection.ts'), join('src', 'redis', 'redis-stores.ts')]);
  for (const file of sourceFiles('src/core')) {
    for (const spec of importsOf(file)) assert.ok(!spec.includes('/redis/'), `${file} imports ${spec}: core knows stores only by their interfaces`);
  }
});

test('layers: src/core imports neither node:http nor Express; only src/express imports Express; only the main entry imports src/express', () => {
  for (const file of sourceFiles('src')) {
    const imports = importsOf(file);
    if (file.startsWith(join('src', 'core'))) {
      const leavesCore = (i: string): boolean => i.startsWith('.') && !join(dirname(file), i).startsWith(join('src', 'core'));
      assert.ok(!imports.some((i) => i === 'node:http' || i === 'node:https' || i === 'express' || leavesCore(i)), `${file}: ${imports.join(', ')}`);
    }
    if (!file.startsWith(join('src', 'express'))) assert.ok(!imports.includes('express'), `${file} imports express`);
    // Adapters sit on the pipeline (src/http), never on the Express adapter: only the main entry reaches it.
    if (file !== join('src', 'index.ts') && !file.startsWith(join('src', 'express'))) {
      assert.ok(!imports.some((i) => /(^|\/)express\//.test(i)), `${file} imports from src/express: ${imports.join(', ')}`);
    }
  }
});

test('src/client, the client side, stands alone: no other src/ folder, no Express, and the SDK in types only', () => {
  for (const file of sourceFiles(join('src', 'client'))) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const spec of importsOf(file)) {
      assert.ok(!spec.startsWith('..') && spec !== 'express', `${file} imports ${spec}: src/client is what a client imports, with none of the server`);
    }
    // The SDK is an optional peer: its types describe the provider, but nothing loads it for the client entry.
    assert.doesNotMatch(text, /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'@modelcontextprotocol\//m, `${file} loads the SDK`);
  }
});

test("the README's Development table names every src/ folder, each importing only from the folders above it", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = /^## Development\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
  const listed = [...section.matchAll(/^\| `src\/([a-z-]+)\/` \|/gm)].map((m) => m[1]!);
  const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  assert.deepEqual([...listed].sort(), [...folders].sort(), 'the table lists each src/ folder once');
  for (const [position, folder] of listed.entries()) {
    for (const file of sourceFiles(join('src', folder))) {
      const depth = relative(join('src', folder), dirname(file)).split(/[\\/]/).filter(Boolean).length;
      for (const spec of importsOf(file)) {
        const reached = /^((?:\.\.\/)+)([a-z-]+)\//.exec(spec);
        if (!reached || reached[1]!.length / 3 !== depth + 1) continue;
        assert.ok(listed.indexOf(reached[2]!) < position, `${file} imports ${spec}, but src/${reached[2]}/ is not above src/${folder}/ in the README`);
      }
    }
  }
});

test('every type named in an exported signature is exported by an entry point', () => {
  const program = ts.createProgram(ENTRIES.map((e) => join(ROOT, e)), { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, skipLibCheck: true, noEmit: true });
  const checker = program.getTypeChecker();
  const resolve = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exported = new Set<ts.Symbol>();
  const roots: ts.Symbol[] = [];
  for (const entry of ENTRIES) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, entry))!)!;
    for (const s of checker.getExportsOfModule(module)) {
      exported.add(resolve(s));
      roots.push(resolve(s));
    }
  }
  const missing = new Set<string>();
  const seen = new Set<ts.Node>();
  const visit = (node: ts.Node, owner: string): void => {
    if (seen.has(node)) return;
    seen.add(node);
    // Function bodies and initializers are not part of a signature.
    if (ts.isBlock(node) || (ts.isVariableDeclaration(node) && node.initializer && node.type === undefined)) return;
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      const at = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      const symbol = checker.getSymbolAtLocation(at);
      const target = symbol && resolve(symbol);
      const declaration = target?.declarations?.[0];
      if (target && declaration && !(target.flags & ts.SymbolFlags.TypeParameter)) {
        const file = declaration.getSourceFile().fileName;
        if (file.startsWith(join(ROOT, 'src')) && !exported.has(target)) missing.add(`${target.name} (${relative(ROOT, file)}), in ${owner}`);
      }
    }
    node.forEachChild((child) => visit(child, owner));
  };
  for (const symbol of roots) for (const declaration of symbol.declarations ?? []) visit(declaration, symbol.name);
  assert.deepEqual([...missing].sort(), []);
});

test('the tsconfig paths that let examples import the package by name name each entry point, and only those', () => {
  // tsx and the type check resolve `mcp-oauth-guard/…` through these paths to src/, so examples run the code under
  // test with no build; an installed package resolves the same names through package.json `exports` to dist/.
  const tsconfig = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile).config as { compilerOptions: { paths: Record<string, string[]> } };
  const paths = Object.fromEntries(Object.entries(tsconfig.compilerOptions.paths).map(([name, [file]]) => [name, file!.replace(/^\.\//, '')]));
  assert.deepEqual(paths, Object.fromEntries(ENTRY_SOURCES));
});

test('examples import the library by its package name, and only its entry points', () => {
  const files = sourceFiles('examples');
  for (const file of files) {
    for (const spec of importsOf(file)) {
      const reached = spec.startsWith('.') ? relative(ROOT, join(dirname(file), spec)) : '';
      assert.ok(!reached.startsWith('src') && !reached.startsWith('test'), `${file} imports ${spec}: examples import 'mcp-oauth-guard' (or an entry such as 'mcp-oauth-guard/core') and their own files`);
      if (spec === PACKAGE.name || spec.startsWith(`${PACKAGE.name}/`)) assert.ok(ENTRY_SOURCES.has(spec), `${file} imports ${spec}, which is no entry point`);
    }
  }
  // That each imported name is exported is the type check's: the paths lead only to the entry points.
});

test('a name the main entry keeps for earlier 0.1 code is deprecated with the entry it moved to, which exports it', async () => {
  const file = ts.createSourceFile('index.ts', readFileSync(join(ROOT, 'src/index.ts'), 'utf8'), ts.ScriptTarget.Latest, true);
  const moved: string[] = [];
  for (const statement of file.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.exportClause || !ts.isNamedExports(statement.exportClause)) continue;
    for (const specifier of statement.exportClause.elements) {
      const comment = ts.getJSDocTags(specifier).find((tag) => tag.tagName.text === 'deprecated');
      if (!comment) continue;
      const text = ts.getTextOfJSDocComment(comment.comment) ?? '';
      const target = /`(mcp-oauth-guard\/[a-z0-9]+)`/.exec(text)?.[1];
      assert.ok(target && ENTRY_SOURCES.has(target), `${specifier.name.text}: the deprecation names the entry it moved to (${text})`);
      assert.match(text, /leaves the main entry in 0\.2/, specifier.name.text);
      const entry = (await import(join(ROOT, ENTRY_SOURCES.get(target)!))) as Record<string, unknown>;
      const isType = specifier.isTypeOnly || statement.isTypeOnly;
      // Types leave no trace at run time: the entry's source must export them by name.
      if (isType) assert.match(readFileSync(join(ROOT, ENTRY_SOURCES.get(target)!), 'utf8'), new RegExp(`\\b${specifier.name.text}\\b`), `${target} exports ${specifier.name.text}`);
      else assert.equal(entry[specifier.name.text], (await import('../../src/index.js') as Record<string, unknown>)[specifier.name.text], `${target} exports ${specifier.name.text}`);
      moved.push(specifier.name.text);
    }
  }
  // The building blocks that left the middleware API; docs/development.md ("Moving from 0.1") names each.
  const upgrade = readFileSync(join(ROOT, 'docs/development.md'), 'utf8');
  for (const name of moved) assert.ok(upgrade.includes(`\`${name}\``), `docs/development.md names ${name}`);
  assert.ok(moved.includes('filterListResponse'), 'the response patcher is a building block, not the middleware API');
});
