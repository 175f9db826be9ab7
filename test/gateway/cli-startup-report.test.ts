// The CLI's start-up reports: a configuration error for each MCP_AUTH_* variable that is no setting (with the one
// meant), every problem in one message, the listening line naming the issuer and the policy, and the coverage warnings and summary line once the upstream has
// been listed.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from '../helpers/child-process.js';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startUpstreamServer } from '../../examples/gateway/upstream-server.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = resolve(ROOT, 'src/gateway/cli.ts');

let issuer: TestIssuer;
let upstream: { url: string; server: Server };
let dir: string;
const children: ChildProcess[] = [];

/** Runs the CLI (under node with `nodeArgs`) until `done(stdout, stderr)` holds or it exits; then stops it. */
async function runUntil(args: string[], env: Record<string, string>, done: (stdout: string, stderr: string) => boolean, nodeArgs: string[] = []): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...nodeArgs, CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  const exited = once(child, 'exit') as Promise<[number | null]>;
  await new Promise<void>((resolveWait, reject) => {
    const timer = setTimeout(() => reject(new Error(`no report within 20 s; stdout: ${stdout} stderr: ${stderr}`)), 20_000);
    const check = (): void => {
      if (done(stdout, stderr)) {
        clearTimeout(timer);
        resolveWait();
      }
    };
    child.stdout!.on('data', (c: Buffer) => ((stdout += c.toString()), check()));
    child.stderr!.on('data', (c: Buffer) => ((stderr += c.toString()), check()));
    void exited.then(() => (clearTimeout(timer), resolveWait()));
  });
  if (child.exitCode === null) child.kill('SIGTERM');
  const [code] = await exited;
  return { stdout, stderr, code };
}

describe('gateway CLI start-up reports', () => {
  before(async () => {
    issuer = await startTestIssuer();
    upstream = await startUpstreamServer('127.0.0.1', 0);
    dir = mkdtempSync(join(tmpdir(), 'cli-startup-'));
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await issuer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a misspelt MCP_AUTH_POLICIES stops the gateway, naming the variable meant, in one message with every other problem', async () => {
    const run = await runUntil(['--upstream', upstream.url], { MCP_AUTH_POLICIES: 'policy.json', MCP_AUTH_ISSUR: 'https://auth.example.com' }, () => false);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      'mcp-oauth-guard: configuration error: 3 settings need fixing:\n' +
        '  MCP_AUTH_ISSUR: is not a setting; did you mean MCP_AUTH_ISSUER?\n' +
        '  MCP_AUTH_POLICIES: is not a setting; did you mean MCP_AUTH_POLICY?\n' +
        "  MCP_AUTH_ISSUER (--issuer): is required: set it to your authorization server's issuer URL, e.g. https://auth.example.com (for a local one, in a clone of this repository: `npm run auth-server -- --resource <the MCP URL> --scopes <scopes>`)\n",
    );
    assert.ok(!run.stderr.includes('policy.json'), 'values are never echoed');
  });

  it('bad flags and bad settings together: one message, a line each, exit 2, no stack', async () => {
    const run = await runUntil(['--upstream', upstream.url, '--polcy', 'policy.json', '--max-sessions', '0', '--heap-growing-percent', '5000'], { MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_CLOCK_TOLERANCE: 'five' }, () => false);
    assert.equal(run.code, 2);
    const lines = run.stderr.trimEnd().split('\n');
    assert.deepEqual(lines, [
      'mcp-oauth-guard: configuration error: 4 settings need fixing:',
      '  --polcy: is not a known flag; did you mean --policy?',
      '  MCP_AUTH_CLOCK_TOLERANCE (--clock-tolerance): must be a whole number from 0 to 300 (got "five")',
      '  MCP_AUTH_HEAP_GROWING_PERCENT (--heap-growing-percent): must be a whole number from 0 to 1000 (got "5000"); or off to disable',
      '  MCP_AUTH_MAX_SESSIONS (--max-sessions): must be a whole number from 1 to 10000000 (got "0")',
    ]);
  });

  it('a policy with a typo: listening line with issuer and policy, the typo and open tool warnings, the summary', async () => {
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ tools: { whoami: [], counter_gte: ['counter:read'], counter_increment: ['counter:write'] } }));
    const run = await runUntil(['--port', '0', '--upstream', upstream.url, '--policy', policy], { MCP_AUTH_ISSUER: issuer.issuer }, (stdout) => stdout.includes('"event":"summary"'));
    const out = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
    const listening = out.find((l) => l.event === 'listening');
    assert.deepEqual(listening?.issuers, [issuer.issuer]);
    assert.equal(listening?.policy, policy);
    assert.equal(listening?.lists, 'filtered');
    assert.equal(listening?.upstream, upstream.url);
    // V8's heap growing factor, set for a proxy (heap-growing-factor.ts).
    assert.equal(listening?.heapGrowingPercent, 300);
    const summary = out.find((l) => l.event === 'summary');
    assert.deepEqual(summary?.issuers, [issuer.issuer]);
    assert.equal(summary?.policy, policy);
    assert.deepEqual(summary?.tools, { protected: 1, open: 2 });
    const warnings = run.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
    assert.equal(warnings.find((w) => w.rule === 'counter_gte')?.suggestion, 'counter_get');
    assert.deepEqual(warnings.find((w) => w.kind === 'tools')?.names, ['counter_get']);
  });

  it('MCP_AUTH_HEAP_GROWING_PERCENT sets the factor, a --heap-growing-percent given to node wins, and the listening line says which (and which lists)', async () => {
    const listeningOf = (stdout: string): Record<string, any> | undefined => stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>).find((l) => l.event === 'listening');
    const isListening = (stdout: string): boolean => stdout.includes('"event":"listening"');
    const env = { MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_HEAP_GROWING_PERCENT: '150' };
    const [set, node] = await Promise.all([
      runUntil(['--port', '0', '--upstream', upstream.url, '--lists', 'all'], env, isListening),
      runUntil(['--port', '0', '--upstream', upstream.url], env, isListening, ['--heap-growing-percent=0']),
    ]);
    assert.equal(listeningOf(set.stdout)?.heapGrowingPercent, 150);
    assert.equal(listeningOf(set.stdout)?.lists, 'all');
    assert.equal(listeningOf(node.stdout)?.heapGrowingPercent, 0);
  });

  it('the listening line says whether the audit trail and the tool pins are on and where they write; a pin file while pins are off is one warning', async () => {
    const listeningOf = (stdout: string): Record<string, any> | undefined => stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>).find((l) => l.event === 'listening');
    const env = { MCP_AUTH_ISSUER: issuer.issuer };
    const audit = join(dir, 'audit.jsonl');
    const pinFile = join(dir, 'pins.json');
    const [on, off] = await Promise.all([
      runUntil(['--port', '0', '--upstream', upstream.url, '--audit', audit, '--pins', 'warn', '--pin-file', pinFile], env, (stdout) => stdout.includes('"event":"listening"')),
      runUntil(['--port', '0', '--upstream', upstream.url], { ...env, MCP_AUTH_PIN_FILE: join(dir, 'unused-pins.json') }, (stdout, stderr) => stdout.includes('"event":"listening"') && stderr.includes('MCP_AUTH_PIN_FILE')),
    ]);
    const onLine = listeningOf(on.stdout);
    assert.deepEqual([onLine?.audit, onLine?.auditFile, onLine?.pins, onLine?.pinFile], ['file', audit, 'warn', pinFile]);
    assert.ok(!on.stderr.includes('no effect'), on.stderr);
    const offLine = listeningOf(off.stdout);
    assert.deepEqual([offLine?.audit, offLine?.pins], ['off', 'off']);
    assert.equal(Object.hasOwn(offLine ?? {}, 'pinFile'), false, 'pins off: their file is not named as in use');
    const warnings = off.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>).filter((w) => String(w.message).includes('MCP_AUTH_PIN_FILE'));
    assert.equal(warnings.length, 1, off.stderr);
    assert.deepEqual([warnings[0]!.event, warnings[0]!.setting], ['warning', 'MCP_AUTH_PIN_FILE']);
    assert.match(warnings[0]!.message, /has no effect while pins are off/);
  });

  it('an upstream that starts after the gateway: a skipped summary, then the real one once it can be listed', async () => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, 'close');
    // Started once the first (skipped) summary is out.
    let late: Promise<{ url: string; server: Server }> | undefined;
    try {
      const run = await runUntil(['--port', '0', '--upstream', `http://127.0.0.1:${port}/mcp`], { MCP_AUTH_ISSUER: issuer.issuer }, (stdout) => {
        const summaries = stdout.split('\n').filter((l) => l.includes('"event":"summary"'));
        if (summaries.length > 0) late ??= startUpstreamServer('127.0.0.1', port);
        return summaries.some((l) => !l.includes('"coverage":"skipped"'));
      });
      const summaries = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.event === 'summary');
      assert.equal(summaries[0]?.coverage, 'skipped');
      assert.match(summaries[0]?.reason, /ECONNREFUSED/);
      assert.deepEqual(summaries.at(-1)?.tools, { protected: 0, open: 3 });
    } finally {
      const started = await late?.catch(() => undefined);
      started?.server.closeAllConnections();
      started?.server.close();
    }
  });
});
