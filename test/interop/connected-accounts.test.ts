// Connected accounts with real parts end to end: a gateway started from a configuration file with two servers, the
// notes example in connected mode (behind an authorization server of its own, 2-second access tokens, refresh tokens
// rotated at every use) and a plain server; the official SDK client declaring URL elicitation; and headless Chromium
// as the user, signing in at the gateway's authorization server and then at the notes one. It shows the first
// connection, a step-up that does not loop, a refresh on expiry with no browser, a disconnection that revokes the
// refresh token at the upstream (after which the list still shows notes' tools, kept from alice's earlier list), and
// that no token of the upstream's reaches the client, the log or the metrics.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ownerKey } from '../../examples/notes-server.js';
import { CONNECT_INPUT_KEY } from '../../src/gateway/connected/flow/connection-required-answer.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { CHROMIUM_SKIP, launchChromium } from '../helpers/chromium.js';
import {
  CONNECTED_USERS,
  LOGIN_CLIENT,
  NOTES_SCOPES,
  STORE_KEY,
  startConnectedAccountsParts,
  tokenActive,
  UPSTREAM_CLIENT,
  watchIssuedTokens,
  type ConnectedAccountsParts,
  type ConnectedUser,
  type IssuedTokens,
} from '../helpers/connected-accounts.js';
import { withTimeout } from '../helpers/everything-server.js';
import { postMcp } from '../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../helpers/plain-mcp-server.js';

const ALICE: ConnectedUser = CONNECTED_USERS[0];
const STATELESS = '2026-07-28';
/** The notes access tokens' lifetime at their authorization server, in seconds. */
const NOTES_TOKEN_TTL = 2;

/** What the browser did on one walk through the sign-ins: each page, as `<kind>@<gateway|notes>`, and where it ended. */
interface Walk {
  readonly pages: string[];
  /** Scopes the notes consent page listed for the notes resource, when it was shown. */
  readonly notesConsent: string[];
  readonly title: string;
  readonly text: string;
}

const SKIP = CHROMIUM_SKIP;
// A skipped suite is not counted in the runner's "# skipped" total: a test of its own makes the skip visible there.
if (SKIP) it('connected accounts end to end in headless Chromium', { skip: SKIP }, () => {});

describe('connected accounts end to end: the SDK client, a configuration file, and headless Chromium', { skip: SKIP, timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let plain: PlainMcpServer;
  let gateway: RunningGateway;
  let issued: IssuedTokens;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let client: Client;
  const logLines: string[] = [];
  /** Every answer body the SDK client received (read from a copy, as it arrived). */
  const answers: Promise<string>[] = [];
  /** Every page body the browser got from the gateway. */
  const gatewayPages: Promise<string>[] = [];
  let browserRequests = 0;

  const kindOf = (url: string): string => (url.startsWith(parts.gatewayAs.issuer) ? 'gateway' : url.startsWith(parts.notesAs.issuer) ? 'notes' : 'other');

  /**
   * Plays alice from `start` until the browser is back on a gateway page that is not a redirect: signs in and
   * approves wherever asked. Each form post ends in a new document, so each step waits for the URL to change.
   */
  async function walk(start: string): Promise<Walk> {
    const pages: string[] = [];
    let notesConsent: string[] = [];
    const submit = async (selector: string): Promise<void> => {
      const before = page.url();
      await page.click(selector);
      await page.waitForURL((url) => url.href !== before);
    };
    await page.goto(start);
    for (let step = 0; step < 8; step += 1) {
      const url = page.url();
      if (url.startsWith(parts.origin)) return { pages, notesConsent, title: await page.title(), text: await page.locator('body').innerText() };
      if ((await page.locator('#login-form').count()) > 0) {
        pages.push(`login@${kindOf(url)}`);
        await page.fill('input[name=login]', ALICE.username);
        await page.fill('input[name=password]', ALICE.password);
        await submit('button#submit');
        continue;
      }
      if ((await page.locator('#consent-form').count()) > 0) {
        pages.push(`consent@${kindOf(url)}`);
        if (kindOf(url) === 'notes') notesConsent = await page.locator(`#scopes code.scope[data-resource="${parts.notes.url}"]`).allTextContents();
        await submit('button#approve');
        continue;
      }
      throw new Error(`unexpected page at ${url}: ${(await page.locator('body').innerText()).slice(0, 300)}`);
    }
    throw new Error(`the browser did not come back to the gateway: ${pages.join(' → ')}`);
  }

  /** Calls `name` with the SDK client; the URL elicitation error it raised, or undefined with the result. */
  async function callTool(name: string, args: Record<string, unknown> = {}): Promise<{ text?: string; elicitation?: UrlElicitationRequiredError }> {
    try {
      const result = await withTimeout(client.callTool({ name, arguments: args }), 10_000, name);
      assert.equal(result.isError, undefined, JSON.stringify(result));
      return { text: (result.content as Array<{ text: string }>)[0]!.text };
    } catch (error) {
      if (error instanceof UrlElicitationRequiredError) return { elicitation: error };
      throw error;
    }
  }

  /** The connect link of a URL elicitation error, checked for its shape: the gateway's page, naming no user. */
  function linkOf(elicitation: UrlElicitationRequiredError | undefined): string {
    assert.ok(elicitation, 'a URL elicitation error');
    assert.equal(elicitation.code, ErrorCode.UrlElicitationRequired);
    assert.equal(elicitation.elicitations.length, 1);
    const [request] = elicitation.elicitations;
    assert.equal(request!.mode, 'url');
    assert.match(request!.url, new RegExp(`^${parts.origin}/connect/[A-Za-z0-9_-]{43}$`));
    assert.ok(!request!.url.includes(ALICE.username), 'the link names no user');
    return request!.url;
  }

  const aliceNotes = (): readonly string[] => parts.notes.store.list(ownerKey(parts.notesAs.issuer, ALICE.username));
  const refreshGrants = (): number => issued.grants.get('refresh_token') ?? 0;

  before(async () => {
    parts = await startConnectedAccountsParts({ notesAs: { rotateRefreshTokens: true }, notesResource: { accessTokenTtl: NOTES_TOKEN_TTL }, notesServer: 'notes' });
    issued = watchIssuedTokens(parts.notesAs);
    plain = await startPlainMcpServer();
    // The configuration file, with the secrets beside it in files and in the environment, never in the file itself.
    writeFileSync(join(parts.tempDir, 'store-key'), STORE_KEY);
    writeFileSync(join(parts.tempDir, 'login-secret'), LOGIN_CLIENT.clientSecret);
    const file = join(parts.tempDir, 'gateway.json');
    const servers = {
      notes: { url: parts.notes.url, auth: { mode: 'connected', clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: 'NOTES_CLIENT_SECRET', scope: ['notes:read', 'notes:write'] } },
      plain: { url: plain.url },
    };
    const settings = { issuer: parts.gatewayAs.issuer, host: '127.0.0.1', port: parts.port, tokenStore: parts.storeDir, tokenStoreSecretFile: 'store-key', loginClientId: LOGIN_CLIENT.clientId, loginClientSecretFile: 'login-secret', metricsPort: 0 };
    writeFileSync(file, JSON.stringify({ gateway: settings, servers }, null, 2));
    const config = loadGatewayConfig({ PATH: process.env.PATH, MCP_AUTH_CONFIG: file, NOTES_CLIENT_SECRET: UPSTREAM_CLIENT.clientSecret });
    gateway = await startGateway(config, { log: (line) => logLines.push(line), warn: (line) => logLines.push(line) });
    parts.trustGateway(gateway.resource);

    browser = await launchChromium();
    context = await browser.newContext();
    context.on('request', () => void browserRequests++);
    context.on('response', (response) => {
      if (response.url().startsWith(parts.origin)) gatewayPages.push(response.text().catch(() => ''));
    });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.setDefaultNavigationTimeout(10_000);

    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if ((init?.method ?? 'GET') !== 'GET') answers.push(response.clone().text().catch(() => ''));
      return response;
    };
    const token = await parts.callerToken(gateway.resource, ALICE.username);
    client = new Client({ name: 'connected-accounts', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.onerror = () => {};
    const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: recording });
    await withTimeout(client.connect(transport), 10_000, 'initialize');
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await context?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await gateway?.shutdown();
    plain?.close();
    await parts?.close();
  });

  it('lists the plain server, calls notes and gets a URL elicitation; alice connects in Chromium and the retry reaches notes', async () => {
    const listed = await withTimeout(client.listTools(), 10_000, 'tools/list');
    const names = listed.tools.map((tool) => tool.name);
    assert.ok(names.includes('plain__echo'), names.join());
    // MCP_AUTH_CONNECT_LISTS=show (the default): the unconnected server lists nothing yet (no connected user has listed
    // it), and the list says why, with the link.
    assert.deepEqual(names.filter((name) => name.startsWith('notes__')), [], names.join());
    const notes = (listed._meta as Record<string, Record<string, { message: string; url: string }>> | undefined)?.[CONNECT_INPUT_KEY];
    assert.ok(notes?.notes, `the list says which server to connect, and how: ${JSON.stringify(listed._meta)}`);
    assert.match(notes.notes.message, /"notes" is not connected/);
    assert.match(notes.notes.url, new RegExp(`^${parts.origin}/connect/[A-Za-z0-9_-]{43}$`));
    assert.ok(!JSON.stringify(listed._meta).includes('unavailable'), 'a server to connect is not a server down');
    assert.equal((await callTool('plain__echo', { text: 'hi' })).text, 'echo: hi');

    const first = await callTool('notes__notes_add', { text: 'from the SDK client' });
    const link = linkOf(first.elicitation);
    assert.deepEqual(aliceNotes(), [], 'the upstream was not called');
    assert.equal(issued.tokens.length, 0, 'no upstream token yet');

    const walked = await walk(link);
    assert.deepEqual(walked.pages, ['login@gateway', 'consent@gateway', 'login@notes', 'consent@notes'], walked.pages.join(' → '));
    assert.deepEqual(walked.notesConsent.sort(), ['notes:read', 'notes:write']);
    assert.equal(walked.title, 'Connected');
    assert.match(walked.text, /Connected to .*notes/);

    const retried = await callTool('notes__notes_add', { text: 'from the SDK client' });
    assert.equal(retried.text, 'added note #1');
    assert.deepEqual(aliceNotes(), ['from the SDK client']);
    const who = JSON.parse((await callTool('notes__whoami')).text!) as { subject: string; client: string; scopes: string[] };
    assert.deepEqual([who.subject, who.client], [ALICE.username, UPSTREAM_CLIENT.clientId], 'notes sees alice, through the gateway as its client');
    const after = (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((tool) => tool.name);
    assert.ok(after.includes('notes__notes_add') && after.includes('plain__echo'), after.join());
  });

  it('step-up: notes_clear needs notes:admin, which the connection lacks; a retry still refused gets a final refusal, and with the scope granted the call succeeds', async () => {
    // The notes authorization server withholds notes:admin for now: a step-up cannot get it.
    parts.notesAs.addResource(parts.notes.url, { scopes: ['notes:read', 'notes:write'], accessTokenTtl: NOTES_TOKEN_TTL });
    const bearer = await parts.callerToken(gateway.resource, ALICE.username);
    const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };
    const clear = (extra: Record<string, unknown> = {}) =>
      postMcp(gateway.resource, { jsonrpc: '2.0', id: 'clear', method: 'tools/call', params: { name: 'notes__notes_clear', arguments: {}, _meta: meta, ...extra } }, bearer, {
        'mcp-protocol-version': STATELESS,
        'mcp-method': 'tools/call',
        'mcp-name': 'notes__notes_clear',
      });
    const first = await clear();
    assert.equal(first.json?.result?.resultType, 'input_required', first.text);
    const request = first.json.result.inputRequests[CONNECT_INPUT_KEY] as { params: { url: string; message: string } };
    assert.match(request.params.message, /lacks the permissions .*notes:admin/);
    const walked = await walk(request.params.url);
    assert.equal(walked.title, 'Connected', walked.text);
    const retry = await clear({ requestState: first.json.result.requestState, inputResponses: { [CONNECT_INPUT_KEY]: { action: 'accept' } } });
    // No second connect flow for the same scope: a final refusal saying the authorization server did not grant it,
    // and not the upstream's challenge, which names the upstream's authorization server, not one the client could
    // sign in at.
    assert.equal(retry.status, 403, retry.text);
    assert.equal(retry.json?.result, undefined, retry.text);
    assert.equal(retry.json.error?.code, -31403, retry.text);
    assert.match(retry.json.error.message, /did not grant .*notes:admin/);
    assert.doesNotMatch(retry.text, /\/connect\//, 'no new link');
    assert.equal(retry.headers['www-authenticate'], undefined);
    assert.deepEqual(aliceNotes(), ['from the SDK client'], 'nothing was cleared');

    // Now the authorization server grants it: the SDK client is led to connect again for it, and the call succeeds.
    parts.notesAs.addResource(parts.notes.url, { scopes: NOTES_SCOPES, accessTokenTtl: NOTES_TOKEN_TTL });
    const refused = await callTool('notes__notes_clear');
    const stepUpLink = linkOf(refused.elicitation);
    assert.match(refused.elicitation!.elicitations[0]!.message, /lacks the permissions .*notes:admin/);
    const stepUp = await walk(stepUpLink);
    assert.equal(stepUp.title, 'Connected', stepUp.text);
    // The gateway asks for the scope the upstream named with those the connection holds, so that none is lost.
    assert.deepEqual(stepUp.notesConsent.sort(), ['notes:admin', 'notes:read', 'notes:write'], stepUp.pages.join(' → '));
    assert.equal((await callTool('notes__notes_clear')).text, 'deleted 1 notes');
    assert.deepEqual(aliceNotes(), []);
  });

  it('refresh on expiry: after the access token expired, a call succeeds with no browser step, by one refresh grant that rotated the refresh token', async () => {
    const spent = issued.refreshTokens.at(-1)!;
    assert.equal(await tokenActive(parts.notesAs, spent), true);
    await sleep(NOTES_TOKEN_TTL * 1000 + 300);
    const [grants, requests] = [refreshGrants(), browserRequests];
    assert.equal((await callTool('notes__notes_add', { text: 'after expiry' })).text, 'added note #1');
    assert.equal(refreshGrants(), grants + 1, 'the gateway refreshed once');
    assert.equal(browserRequests, requests, 'no browser step');
    assert.equal(await tokenActive(parts.notesAs, spent), false, 'the refresh token used is spent (rotated)');
    assert.notEqual(issued.refreshTokens.at(-1), spent);
    assert.equal(await tokenActive(parts.notesAs, issued.refreshTokens.at(-1)!), true, 'the rotated one is kept and live');
    assert.deepEqual(aliceNotes(), ['after expiry']);
  });

  it('disconnect: the connections page lists notes, refuses a form without its CSRF token, and disconnecting revokes at the upstream; the next call asks to connect again', async () => {
    const refreshToken = issued.refreshTokens.at(-1)!;
    assert.equal(await tokenActive(parts.notesAs, refreshToken), true);
    const listed = await walk(`${parts.origin}/connections`);
    assert.equal(listed.title, 'Your connections', listed.text);
    assert.match(listed.text, /notes/);
    const forged = await context.request.post(`${parts.origin}/connections/disconnect`, { form: { csrf: 'not-the-token', server: 'notes' }, headers: { origin: parts.origin }, maxRedirects: 0 });
    assert.equal(forged.status(), 403);
    assert.equal(await tokenActive(parts.notesAs, refreshToken), true, 'nothing revoked without the token');

    const button = page.locator('#connections li', { hasText: 'notes' }).locator('button');
    await Promise.all([page.waitForResponse((r) => r.url() === `${parts.origin}/connections` && r.request().method() === 'GET'), button.click()]);
    await page.waitForLoadState();
    assert.match(await page.locator('body').innerText(), /You have no connected servers/);
    assert.equal(await tokenActive(parts.notesAs, refreshToken), false, 'revoked at the notes authorization server (RFC 7009)');
    assert.ok(logLines.some((line) => line.includes('"disconnected"') && line.includes('"notes"')), 'the disconnection is logged');

    // Not connected any more: the list shows the tools notes last listed for a connected user, and says why, with the link.
    const relisted = await withTimeout(client.listTools(), 10_000, 'tools/list');
    const names = relisted.tools.map((tool) => tool.name);
    assert.ok(names.includes('notes__notes_list') && names.includes('plain__echo'), names.join());
    const note = (relisted._meta as Record<string, Record<string, { message: string }>> | undefined)?.[CONNECT_INPUT_KEY]?.notes;
    assert.match(note?.message ?? '', /"notes" is not connected/);
    const again = await callTool('notes__notes_list');
    linkOf(again.elicitation);
  });

  it('no token of the upstream reaches the client, the browser, a log line or the metrics', async () => {
    const bodies = await Promise.all(answers);
    const pages = await Promise.all(gatewayPages);
    const metrics = await (await fetch(gateway.metricsUrl!, { signal: AbortSignal.timeout(5_000) })).text();
    // What there is to search: the answers and pages seen, the log, and metrics that did count the calls.
    assert.ok(bodies.some((body) => body.includes('added note #1')) && bodies.length >= 10, `${bodies.length} answers`);
    assert.ok(pages.some((body) => body.includes('Connected')), `${pages.length} pages`);
    assert.ok(logLines.length >= 10, `${logLines.length} log lines`);
    assert.match(metrics, /mcp_guard_requests_total/);
    // Every access and refresh token the notes authorization server issued, and the signature of each JWT alone.
    assert.ok(issued.refreshTokens.length >= 4 && issued.tokens.length >= 8, `${issued.tokens.length} tokens issued`);
    const secrets = issued.tokens.flatMap((token) => (token.split('.').length === 3 ? [token, token.split('.')[2]!] : [token]));
    const leaked = (text: string): string[] => secrets.filter((secret) => text.includes(secret));
    assert.equal(leaked(`a line with ${issued.refreshTokens[0]} in it`).length, 1, 'the search finds a token where there is one');
    bodies.forEach((body, i) => assert.deepEqual(leaked(body), [], `answer ${i} to the client`));
    pages.forEach((body, i) => assert.deepEqual(leaked(body), [], `gateway page ${i}`));
    logLines.forEach((line, i) => assert.deepEqual(leaked(line), [], `log line ${i}`));
    assert.deepEqual(leaked(metrics), [], 'metrics');
  });
});
