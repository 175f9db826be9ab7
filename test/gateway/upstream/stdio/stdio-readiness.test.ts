// /readyz in front of a stdio upstream: besides "the program can be started", the outcome of the most recent
// process the gateway started (the policy check's listing, a session's) decides, so that a misspelt script is
// not ready; probes themselves start no process.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import type { ChildEndReason } from '../../../../src/gateway/upstream/stdio/stdio-child.js';
import { createStdioStartOutcomes, type StdioStartWatch } from '../../../../src/gateway/upstream/stdio/stdio-start-outcome.js';
import { listStdioUpstream } from '../../../../src/gateway/upstream/upstream-catalog.js';
import { startTestIssuer, type TestIssuer } from '../../../helpers/fake-issuer.js';
import { childEvents, NODE_SERVER, PYTHON_SERVER, quote, RawSession, stdioServers } from '../../../helpers/stdio-gateway.js';

let issuer: TestIssuer;
let dir: string;
const gateways: RunningGateway[] = [];

/** A gateway in front of `command`, its log lines kept; answers to /readyz are reused for a minute. */
async function gatewayFor(command: string, settings: Record<string, string> = {}): Promise<{ gateway: RunningGateway; logs: string[] }> {
  const logs: string[] = [];
  const config = loadGatewayConfig({ HOST: '127.0.0.1', PORT: '0', MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_UPSTREAM_COMMAND: command, ...settings });
  // A long cache: a new process outcome must be seen at once all the same.
  const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {}, readinessCacheMs: 60_000 });
  gateways.push(gateway);
  return { gateway, logs };
}

async function readyz(gateway: RunningGateway): Promise<{ status: number; body: Record<string, any> }> {
  const answer = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}

const started = (logs: readonly string[]): number => childEvents(logs).filter((e) => e.event === 'upstream_started').length;

/** The start-up listing, as the command runs it. */
async function listAtStartUp(gateway: RunningGateway): Promise<boolean> {
  return !('skipped' in (await gateway.reportPolicyCoverage()));
}

const python = stdioServers().find((server) => server.name === 'Python')!;

describe('/readyz for a stdio upstream: the most recent process start', () => {
  before(async () => {
    issuer = await startTestIssuer();
    dir = mkdtempSync(join(tmpdir(), 'stdio-readyz-'));
  });
  after(async () => {
    for (const g of gateways) await g.shutdown();
    await issuer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a misspelt Python script: 503 with its exit and last stderr line once the start-up listing failed', { skip: python.skip }, async () => {
    const misspelt = join(dir, 'serve.py');
    const { gateway, logs } = await gatewayFor(python.command!.replace(quote(PYTHON_SERVER), quote(misspelt)));
    // No process has settled yet: the program (python3) can be started, which alone decides until one does.
    assert.equal((await readyz(gateway)).status, 200);
    assert.equal(await listAtStartUp(gateway), false);
    const ready = await readyz(gateway);
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'not_ready');
    assert.deepEqual(ready.body.issuers, { ok: true });
    assert.equal(ready.body.upstream.ok, false);
    assert.match(ready.body.upstream.reason, /^the most recent upstream process exited with code 2 before it answered; its stderr is in the gateway's log \(upstream_stderr\)$/);
    assert.ok(!JSON.stringify(ready.body).includes('serve.py'), 'the program\'s stderr is not quoted on /readyz');
    // Probes start nothing: only the listing started a process.
    const before = started(logs);
    for (let i = 0; i < 3; i++) assert.equal((await readyz(gateway)).status, 503);
    assert.equal(started(logs), before);
    assert.equal(before, 1);
  });

  it('a misspelt Node script: 503 naming its exit', async () => {
    const { gateway } = await gatewayFor(`${quote(process.execPath)} ${quote(join(dir, 'serve.mjs'))}`);
    assert.equal(await listAtStartUp(gateway), false);
    const ready = await readyz(gateway);
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.match(ready.body.upstream.reason, /^the most recent upstream process exited with code 1 before it answered/);
  });

  it('a program that starts and never answers: 503 once a session\'s initialize timed out; a listing\'s timeout, or a slow call, changes nothing', async () => {
    const hanging = join(dir, 'hang.mjs');
    // Reads its input and never writes: the gateway must not call that ready.
    writeFileSync(hanging, 'process.stdin.resume();\n');
    const { gateway } = await gatewayFor(`${quote(process.execPath)} ${quote(hanging)}`, { MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '300' });
    const token = await issuer.sign({ aud: gateway.resource, sub: 'alice', scope: 'mcp:basic' });
    assert.equal((await readyz(gateway)).status, 200, 'nothing settled yet: the program check alone');
    const opening = await new RawSession(gateway.resource, token).initialize();
    assert.equal(opening.status, 504, opening.text);
    const down = await readyz(gateway);
    assert.equal(down.status, 503, JSON.stringify(down.body));
    assert.equal(down.body.upstream.reason, "the most recent upstream process did not answer its first request within 300 ms; its stderr is in the gateway's log (upstream_stderr)");

    // The listing waits a short, fixed time: a program only slow to start is not judged by it.
    const starts = createStdioStartOutcomes();
    await assert.rejects(
      listStdioUpstream({ command: process.execPath, args: [hanging] }, () => {}, { requestTimeoutMs: 200 }, undefined, starts.watch()),
      /initialize: no answer within 200 ms/,
    );
    assert.equal(starts.latest(), undefined);

    // A sessionless (2026-07-28) call that the program never answers: the caller's own process, whose first request
    // a caller chooses, so its timeout says nothing about the program and must not take the replica out of service.
    const fresh = await gatewayFor(`${quote(process.execPath)} ${quote(hanging)}`, { MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '300' });
    const call = await fetch(fresh.gateway.resource, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await issuer.sign({ aud: fresh.gateway.resource, sub: 'bob', scope: 'mcp:basic' })}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'slow',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(call.status, 504, await call.text());
    assert.equal((await readyz(fresh.gateway)).status, 200);
  });

  it('a good script: 200 after the start-up listing', async () => {
    const { gateway } = await gatewayFor(`${quote(process.execPath)} ${quote(NODE_SERVER)}`);
    assert.equal(await listAtStartUp(gateway), true);
    const ready = await readyz(gateway);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.deepEqual(ready.body, { status: 'ready', issuers: { ok: true }, upstream: { ok: true } });
  });

  it('a program that starts failing after a good start: 503 once a new process fails, 200 once one answers again; its own secrets never shown', async () => {
    const broken = join(dir, 'broken');
    const script = join(dir, 'flaky.sh');
    const secret = 'sk-test-4f1d9c0b7a2e';
    writeFileSync(script, `#!/bin/sh\nif [ -e ${quote(broken)} ]; then echo "flaky: the key $FLAKY_API_KEY was refused" >&2; exit 3; fi\nexec ${quote(process.execPath)} ${quote(NODE_SERVER)}\n`);
    chmodSync(script, 0o755);
    const { gateway, logs } = await gatewayFor(quote(script), { MCP_AUTH_UPSTREAM_ENV: 'FLAKY_API_KEY', FLAKY_API_KEY: secret });
    const token = await issuer.sign({ aud: gateway.resource, sub: 'alice', scope: 'mcp:basic' });
    assert.equal(await listAtStartUp(gateway), true);
    assert.equal((await readyz(gateway)).status, 200);

    writeFileSync(broken, '');
    // Nothing started since, so nothing is known to have changed: still ready, and the probe started nothing.
    const before = started(logs);
    assert.equal((await readyz(gateway)).status, 200);
    assert.equal(started(logs), before);

    const failing = await new RawSession(gateway.resource, token).initialize();
    assert.equal(failing.status, 502, failing.text);
    const down = await readyz(gateway);
    assert.equal(down.status, 503, JSON.stringify(down.body));
    assert.equal(down.body.upstream.ok, false);
    assert.match(down.body.upstream.reason, /^the most recent upstream process exited with code 3 before it answered; its stderr is in the gateway's log \(upstream_stderr\)$/);
    assert.ok(!JSON.stringify(down.body).includes(secret), 'the program\'s own credential is not shown');

    rmSync(broken);
    const session = new RawSession(gateway.resource, token);
    const working = await session.initialize();
    assert.equal(working.status, 200, working.text);
    const up = await readyz(gateway);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual(up.body.upstream, { ok: true });
    await session.delete();
  });
});

describe('createStdioStartOutcomes', () => {
  const exit = (watch: StdioStartWatch, reason: ChildEndReason, exitCode: number | null = 1): void => watch.log({ event: 'upstream_exit', session: 's', reason, exitCode, signal: null });
  const stderr = (watch: StdioStartWatch, line: string): void => watch.log({ event: 'upstream_stderr', session: 's', line });

  it('nothing known before a process settles; a process the gateway stopped changes nothing', () => {
    const starts = createStdioStartOutcomes();
    const watch = starts.watch();
    stderr(watch, 'starting');
    assert.equal(starts.latest(), undefined);
    exit(watch, 'upstream_stopped', null);
    assert.equal(starts.latest(), undefined);
  });

  it('the newest settled start wins, and a process that answered is not judged by its later exit', () => {
    const starts = createStdioStartOutcomes();
    const good = starts.watch();
    const bad = starts.watch();
    good.answered();
    assert.deepEqual(starts.latest(), { ok: true });
    exit(bad, 'upstream_spawn_failed', null);
    assert.equal(starts.latest()?.ok, false);
    exit(good, 'upstream_exited', 1);
    assert.equal(starts.latest()?.ok, false, 'an exit after answering says nothing about starting');
    const again = starts.watch();
    again.answered();
    assert.deepEqual(starts.latest(), { ok: true });
  });

  it('giving up on the first answer settles the start as not ok; on a later one, or after an exit, it changes nothing', () => {
    const starts = createStdioStartOutcomes();
    const hung = starts.watch();
    hung.timedOut(500);
    assert.deepEqual(starts.latest(), { ok: false, reason: "the most recent upstream process did not answer its first request within 500 ms; its stderr is in the gateway's log (upstream_stderr)" });
    exit(hung, 'upstream_stopped', null);
    hung.answered();
    assert.equal(starts.latest()?.ok, false, 'the stop that follows, or a late answer, does not undo it');
    const slow = starts.watch();
    slow.answered();
    slow.timedOut(500);
    assert.deepEqual(starts.latest(), { ok: true }, 'a request that timed out after the first answer says nothing about starting');
  });

  it('the reason names the exit, never a stderr line (anyone may ask /readyz); a line past the limit is named', () => {
    const starts = createStdioStartOutcomes();
    const watch = starts.watch();
    stderr(watch, 'token abcd1234 refused for alice');
    exit(watch, 'upstream_exited', 2);
    const first = starts.latest();
    assert.deepEqual(first, { ok: false, reason: "the most recent upstream process exited with code 2 before it answered; its stderr is in the gateway's log (upstream_stderr)" });
    stderr(watch, 'late');
    assert.equal(starts.latest(), first, 'a line after the exit changes nothing');
    const big = starts.watch();
    exit(big, 'upstream_line_too_large', null);
    assert.match((starts.latest() as { reason: string }).reason, /was stopped for a message larger than the gateway accepts before it answered/);
    assert.notEqual(starts.latest(), first, 'a new object, so that a cached /readyz answer is not reused');
  });
});
