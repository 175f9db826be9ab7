// A project of one's own that installed this package from its packed tarball, as `npm install mcp-oauth-guard`
// leaves it (its bin linked in node_modules/.bin), made without the network: the package and each of its
// dependencies are packed from this clone (the dependencies from its node_modules) and installed with --offline.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from './child-process.js';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Variables of this process a user's shell in the project has not: the test runner's npm, Node and gateway settings. */
function isTestRunnerVariable(name: string): boolean {
  return name.toLowerCase().startsWith('npm_') || name.startsWith('MCP_AUTH_') || ['HOST', 'PORT', 'NODE_OPTIONS', 'NODE_TEST_CONTEXT'].includes(name);
}

/** The environment of a user's shell: this process's, without the test runner's variables. */
export function userEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !isTestRunnerVariable(name)));
}

/** The environment of a user's shell in `project` (npm, npx and the gateway run in it), with an npm cache of the project's own. */
export function projectEnvironment(project: string): NodeJS.ProcessEnv {
  // The tarballs go into a cache inside the project, removed with it, never into the user's.
  return { ...userEnvironment(), npm_config_cache: join(project, '.npm-cache') };
}

/** The newest modification time under a folder. */
function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
    const path = join(dir, entry.name);
    return Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);
}

/** Builds dist/ (`npm run build`, what `prepare` runs on install) when src/ changed since it was last built. */
export function buildWhenStale(): void {
  let built = 0;
  try {
    built = statSync(join(ROOT, 'dist', 'gateway', 'cli.js')).mtimeMs;
  } catch {
    // not built yet
  }
  if (built >= newest(join(ROOT, 'src'))) return;
  const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, env: userEnvironment(), encoding: 'utf8', timeout: 180_000 });
  assert.equal(build.status, 0, `npm run build failed:\n${build.stdout}${build.stderr}`);
}

/** The folder of an installed package as Node resolves it from `from`: the nearest node_modules holding it. */
function installedFolder(name: string, from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    assert.notEqual(dirname(dir), dir, `${name} is installed (needed from ${from})`);
  }
}

/** This package's dependencies and theirs, each once, by name: the folder it is installed in here. */
function dependencyClosure(): Map<string, string> {
  const folders = new Map<string, string>();
  const visit = (from: string): void => {
    const manifest = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      const folder = installedFolder(name, from);
      const known = folders.get(name);
      if (known === folder) continue;
      // A flat install holds one copy of each: two would need a lock file of their own.
      assert.equal(known, undefined, `${name} is installed twice (${known}, ${folder}); the offline install holds one`);
      folders.set(name, folder);
      visit(folder);
    }
  };
  visit(ROOT);
  return folders;
}

/** Runs npm in `project`, bounded in time; what it printed on stdout. */
function npm(args: readonly string[], project: string): string {
  return execFileSync('npm', args, { cwd: project, env: projectEnvironment(project), encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Installs this package (dist/ built first when stale) into `project`, an empty folder, with its dependencies and
 * without its peers (the middleware's, which the gateway does not load): `npm pack` of the clone and of each
 * dependency, then `npm install --offline` of the tarballs. The bin is then `project/node_modules/.bin/mcp-oauth-guard`.
 */
export function installPackedPackage(project: string): void {
  buildWhenStale();
  const tarballs = join(project, 'tarballs');
  mkdirSync(tarballs, { recursive: true });
  const closure = dependencyClosure();
  // --ignore-scripts: dist/ is built above; packing must not build it again.
  const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', tarballs, ROOT, ...closure.values()], project)) as { name: string; filename: string }[];
  const dependencies = Object.fromEntries(packed.map(({ name, filename }) => [name, `file:tarballs/${filename}`]));
  assert.ok(dependencies['mcp-oauth-guard'], 'the package itself was packed');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-gateway', version: '1.0.0', private: true, dependencies }, null, 2));
  npm(['install', '--offline', '--ignore-scripts', '--legacy-peer-deps', '--no-audit', '--no-fund'], project);
}
