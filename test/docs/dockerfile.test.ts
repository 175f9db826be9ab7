// The Dockerfile cannot be built here (no container engine), so this checks what it names against the package:
// the official Node image of the major version the package needs, files it copies that exist and that
// .dockerignore lets into the build context, the runtime install that leaves out the development dependencies
// (and the `prepare` build that needs them), an unprivileged user, the gateway's default port, and a command that
// is the package's bin as `npm run build` makes it. The command and the health check are run: the command in the
// image's layout, the health check against a gateway started with the image's settings.
import assert from 'node:assert/strict';
import { spawnSync } from '../helpers/child-process.js';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { describe, test } from 'node:test';
import { DEFAULT_GATEWAY_PORT } from '../../src/gateway/config/gateway-config.js';
import { withDeploymentGateway, SETTING_VARIABLES } from '../helpers/deployment-gateway.js';
import { freePort } from '../helpers/free-port.js';
import { buildWhenStale } from '../helpers/installed-package.js';
import { REPOSITORY_ROOT, runCommand } from '../helpers/run-cli.js';

const PACKAGE = JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  files: string[];
  engines: { node: string };
  scripts: Record<string, string>;
};

/** One instruction of the Dockerfile: `COPY a b ./` is `{ keyword: 'COPY', args: 'a b ./' }`. */
interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions per stage (each starts with its FROM), continuation lines joined, comments left out. */
function stages(): Instruction[][] {
  const text = readFileSync(join(REPOSITORY_ROOT, 'Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((line) => !/^\s*#/.test(line));
  const instructions = lines
    .join('\n')
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, keyword = '', args = ''] = /^\s*(\w+)\s+(.*)$/.exec(line) ?? [];
      return { keyword: keyword.toUpperCase(), args: args.trim() };
    });
  const result: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') result.push([]);
    result.at(-1)!.push(instruction);
  }
  return result;
}

/** `ENV A=1 B=2` (and `ENV A 1`) as name → value. */
function environmentOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of stage.filter((instruction) => instruction.keyword === 'ENV')) {
    if (!args.includes('=')) {
      const [name = '', ...rest] = args.split(/\s+/);
      env[name] = rest.join(' ');
      continue;
    }
    for (const [, name = '', value = ''] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[name] = value.replace(/^"|"$/g, '');
  }
  return env;
}

/** The JSON array of an exec-form CMD or HEALTHCHECK CMD. */
function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['));
  const parsed = JSON.parse(json) as unknown;
  assert.ok(Array.isArray(parsed) && parsed.every((word) => typeof word === 'string'), `exec form: ${args}`);
  return parsed as string[];
}

/** The patterns .dockerignore lets back in after its `*`: the build context holds these only. */
function buildContext(): string[] {
  const lines = readFileSync(join(REPOSITORY_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  assert.equal(lines[0], '*', '.dockerignore leaves everything out first, then names what goes in');
  assert.ok(lines.slice(1).every((line) => line.startsWith('!')), 'then only exceptions');
  return lines.slice(1).map((line) => normalize(line.slice(1)));
}

describe('the Dockerfile', () => {
  const [build, runtime, ...others] = stages();
  assert.ok(build && runtime, 'a build stage and a runtime stage');
  assert.deepEqual(others, []);
  const all = [...build, ...runtime];
  const runtimeEnv = environmentOf(runtime);
  const instructions = (stage: Instruction[], keyword: string): string[] => stage.filter((instruction) => instruction.keyword === keyword).map(({ args }) => args);

  test('both stages are the official Node image, pinned to the major version the package needs', () => {
    const needed = Number(/(\d+)/.exec(PACKAGE.engines.node)![1]);
    for (const from of [...instructions(build, 'FROM'), ...instructions(runtime, 'FROM')]) {
      const match = /^node:(\d+)-slim\b/.exec(from);
      assert.ok(match, `FROM node:<major>-slim: ${from}`);
      assert.equal(Number(match[1]), needed, `Node ${needed}, as engines says (${PACKAGE.engines.node})`);
    }
  });

  test('every file it copies from the build context exists and is let in by .dockerignore, which lets in nothing else', () => {
    const context = buildContext();
    const copied: string[] = [];
    for (const args of all.filter((instruction) => instruction.keyword === 'COPY' && !instruction.args.startsWith('--from')).map(({ args }) => args)) {
      const sources = args.split(/\s+/).slice(0, -1);
      for (const source of sources) {
        assert.ok(existsSync(join(REPOSITORY_ROOT, source)), `${source} exists`);
        assert.ok(context.includes(normalize(source)), `.dockerignore lets ${source} in`);
        copied.push(normalize(source));
      }
    }
    assert.deepEqual([...context].sort(), [...new Set(copied)].sort(), 'the context holds what is copied, nothing more');
  });

  test('the build stage installs every dependency and runs npm run build; the runtime stage takes dist/ from it', () => {
    assert.ok(instructions(build, 'RUN').some((run) => /\bnpm ci\b/.test(run) && !run.includes('--omit=dev')));
    assert.ok(instructions(build, 'RUN').includes('npm run build'));
    const outDir = (JSON.parse(readFileSync(join(REPOSITORY_ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string } }).compilerOptions.outDir;
    assert.ok(PACKAGE.scripts.build!.includes('tsconfig.build.json'), 'npm run build compiles with tsconfig.build.json');
    const [workdir] = instructions(build, 'WORKDIR');
    assert.ok(instructions(runtime, 'COPY').includes(`--from=build ${workdir}/${outDir} ./${outDir}`), `COPY --from=build ${workdir}/${outDir}`);
    assert.deepEqual(instructions(runtime, 'WORKDIR'), [workdir!]);
  });

  test('the runtime stage installs with npm ci --omit=dev, and without scripts: prepare would build with development dependencies', () => {
    const install = instructions(runtime, 'RUN').find((run) => /\bnpm ci\b/.test(run)) ?? '';
    assert.ok(install.includes('--omit=dev'), 'npm ci --omit=dev');
    assert.ok(PACKAGE.scripts.prepare, 'the package has a prepare script');
    assert.ok(install.includes('--ignore-scripts'), 'so npm ci must not run it');
    assert.ok(instructions(runtime, 'COPY').some((copy) => copy.split(/\s+/).includes('package.json')), 'package.json ("type": "module", the version) is in the image');
  });

  test('it runs as the unprivileged node user, on the gateway default port, listening beyond loopback', () => {
    assert.deepEqual(instructions(runtime, 'USER'), ['node']);
    assert.deepEqual(instructions(runtime, 'EXPOSE'), [String(DEFAULT_GATEWAY_PORT)]);
    assert.equal(runtimeEnv.PORT ?? String(DEFAULT_GATEWAY_PORT), String(DEFAULT_GATEWAY_PORT));
    assert.equal(runtimeEnv.HOST, '0.0.0.0');
    assert.deepEqual(Object.keys(runtimeEnv).filter((name) => name !== 'NODE_ENV' && !SETTING_VARIABLES.has(name)), [], 'ENV names settings only');
  });

  test("CMD is node on the package's bin, a path in its files, the gateway itself with no npx; it runs in the image's layout", () => {
    const cmd = execForm(instructions(runtime, 'CMD')[0]!);
    assert.equal(instructions(runtime, 'ENTRYPOINT').length, 0);
    assert.equal(cmd[0], 'node');
    assert.equal(cmd.length, 2);
    const bin = normalize(PACKAGE.bin[PACKAGE.name]!);
    assert.equal(normalize(cmd[1]!), bin);
    assert.ok(PACKAGE.files.includes(bin.split('/')[0]!), `${bin} is in package.json files`);
    // The runtime stage's /app: package.json, dist/ as built, the dependencies installed.
    buildWhenStale();
    const app = mkdtempSync(join(tmpdir(), 'image-layout-'));
    try {
      cpSync(join(REPOSITORY_ROOT, 'package.json'), join(app, 'package.json'));
      cpSync(join(REPOSITORY_ROOT, 'dist'), join(app, 'dist'), { recursive: true });
      symlinkSync(join(REPOSITORY_ROOT, 'node_modules'), join(app, 'node_modules'));
      const run = spawnSync(process.execPath, [cmd[1]!, '--version'], { cwd: app, env: { PATH: process.env.PATH ?? '', ...runtimeEnv }, encoding: 'utf8', timeout: 30_000 });
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout.trim(), PACKAGE.version);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  });

  test('HEALTHCHECK asks /healthz with node (the image has no curl): 0 while the gateway serves, 1 when nothing listens', { timeout: 60_000 }, async () => {
    const healthcheck = execForm(instructions(runtime, 'HEALTHCHECK')[0]!);
    assert.equal(healthcheck[0], 'node');
    assert.ok(healthcheck.join(' ').includes('/healthz'));
    // Run asynchronously: the gateway answering it runs in this process.
    const check = async (port: number): Promise<number | null> =>
      (await runCommand(process.execPath, healthcheck.slice(1), { env: { PATH: process.env.PATH ?? '', ...runtimeEnv, PORT: String(port) }, timeoutMs: 30_000 })).code;
    const settings = { ...runtimeEnv, MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp', MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' };
    await withDeploymentGateway(settings, '{}', async (gateway) => {
      assert.equal(await check(Number(new URL(gateway.url).port)), 0);
    });
    assert.equal(await check(await freePort()), 1);
  });
});
