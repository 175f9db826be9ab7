// The published entry points: what each exports, what none exports, which layers import what, and that
// every type named in an exported signature can be imported from some entry point.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRIES = ['src/index.ts', 'src/core/index.ts', 'src/gateway/index.ts', 'src/sdk/index.ts', 'src/sdk/sdk2.ts', 'src/metrics/index.ts', 'src/redis/index.ts'];

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
  for (const entry of ['src/index.ts', 'src/core/index.ts']) {
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
  assert.deepEqual(dynamic, [join('src', 'redis', 'redis-stores.ts')]);
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
