// The demo's login and consent pages driven by a real browser (headless Chromium through playwright-core),
// from the PKCE client's authorization URL to tokens in the client, including a step-up. The scripted
// user (signInToDevelopmentServer, mcp-oauth-guard/client) only proves the pages work for a form parser; this proves they
// work for the browser a person would use: real form submission, cookies, redirects to the loopback listener.
//
// The browser is Debian's `chromium` found on PATH; browsers are never downloaded. .ci/run installs the
// package when it is missing, so under CI a missing browser fails the run; elsewhere the suite is skipped
// with the reason shown.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  DEMO_PASSWORD,
  DEMO_SCOPES,
  DEMO_USERNAME,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../../examples/dev/authorization-server.js';
import { ownerKey, startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { McpOAuthClient } from '../../examples/demo/mcp-oauth-client.js';
import type { TranscriptEvent } from '../../examples/demo/transcript.js';
import { CHROMIUM_SKIP, launchChromium } from '../helpers/chromium.js';

/** Which of the demo's pages the browser was on at each step of one authorization. */
type PageKind = 'login' | 'consent' | 'callback';

interface AuthorizationWalk {
  /** Pages seen, in order, ending with `callback`; a login page shown again after an error counts twice. */
  pages: PageKind[];
  /** Scopes the consent page listed for the requested resource, if it was shown. */
  consentScopes: string[];
}

interface WalkOptions {
  /** Runs once on the first login page before signing in (screenshot, wrong password). */
  onLoginPage?: (page: Page) => Promise<void>;
}

/**
 * Plays the user for one authorization: opens the authorization URL, signs in if asked, approves, and
 * returns once the browser has landed on the client's loopback redirect URI. Every step waits for the URL
 * to change because each form post ends in a new document (a redirect chain or a re-rendered form), and
 * the next step must not read the page that was just submitted.
 */
async function walkAuthorization(page: Page, authorizationUrl: string, options: WalkOptions = {}): Promise<AuthorizationWalk> {
  const redirectUri = new URL(authorizationUrl).searchParams.get('redirect_uri');
  const resource = new URL(authorizationUrl).searchParams.get('resource');
  assert.ok(redirectUri && resource, 'the authorization URL carries a redirect_uri and a resource');
  const walk: AuthorizationWalk = { pages: [], consentScopes: [] };
  let onLoginPage = options.onLoginPage;

  const submit = async (selector: string): Promise<void> => {
    const before = page.url();
    await page.click(selector);
    await page.waitForURL((url) => url.href !== before);
  };

  await page.goto(authorizationUrl);
  // Login, consent, callback: a handful of pages at most; more means the walk is looping.
  for (let step = 0; step < 6; step += 1) {
    if (page.url().startsWith(redirectUri)) {
      walk.pages.push('callback');
      return walk;
    }
    if ((await page.locator('#login-form').count()) > 0) {
      walk.pages.push('login');
      if (onLoginPage) {
        await onLoginPage(page);
        onLoginPage = undefined;
        // The hook may have submitted the form (a wrong password): look at whatever page it left.
        continue;
      }
      await page.fill('input[name=login]', DEMO_USERNAME);
      await page.fill('input[name=password]', DEMO_PASSWORD);
      await submit('button#submit');
      continue;
    }
    if ((await page.locator('#consent-form').count()) > 0) {
      walk.pages.push('consent');
      // Only the scopes listed against the requested resource: the demo AS also lists a scope unknown to
      // OpenID (e.g. notes:read) a second time as a plain OIDC scope, which says nothing about the resource.
      walk.consentScopes = await page.locator(`#scopes code.scope[data-resource="${resource}"]`).allTextContents();
      await submit('button#approve');
      continue;
    }
    const body = (await page.locator('body').innerText()).slice(0, 500);
    throw new Error(`unexpected page at ${page.url()}: ${body}`);
  }
  throw new Error(`no redirect to ${redirectUri} after ${walk.pages.join(' → ')}`);
}

const skipReason = CHROMIUM_SKIP;
// A skipped suite is not counted in the runner's "# skipped" total: a test of its own makes the skip visible there.
if (skipReason) it('real browser: the demo login and consent pages in headless Chromium', { skip: skipReason }, () => {});

describe('real browser: the demo login and consent pages in headless Chromium', { skip: skipReason }, () => {
  let as: AuthorizationServer;
  let notes: RunningNotesServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let artifacts: string;
  let passed = false;

  before(async () => {
    artifacts = await mkdtemp(join(tmpdir(), 'mcp-oauth-guard-browser-'));
    as = await startAuthorizationServer();
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: DEMO_SCOPES });
    // Under CI the package is installed by .ci/run, so its absence is a broken environment, not a skip.
    browser = await launchChromium();
    // A fresh context per suite: no cookies from anything else, so the first authorization must sign in.
    context = await browser.newContext();
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.setDefaultNavigationTimeout(10_000);
  });

  after(async () => {
    await context?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await notes?.close();
    await as?.close();
    // The screenshot is kept when something failed, so the page can be looked at.
    if (artifacts && passed) await rm(artifacts, { recursive: true, force: true });
    else if (artifacts) console.log(`real-browser test artifacts kept in ${artifacts}`);
  });

  it('signs in, consents, gets a token for the notes server, then steps up to notes:write', { timeout: 60_000 }, async () => {
    const walks: AuthorizationWalk[] = [];
    const authorizationUrls: string[] = [];
    const events: TranscriptEvent[] = [];
    const screenshot = join(artifacts, 'login.png');
    let loginErrorStatus: number | undefined;

    const client = new McpOAuthClient({
      mcpUrl: notes.url,
      mode: 'browser',
      authorizationTimeoutMs: 20_000,
      onEvent: (event) => events.push(event),
      // The client awaits this before waiting for its redirect; walking the whole flow here means a page
      // that cannot be driven rejects connect() at once instead of waiting out the redirect timeout.
      openBrowser: async (url) => {
        authorizationUrls.push(url);
        walks.push(
          await walkAuthorization(page, url, {
            onLoginPage:
              walks.length === 0
                ? async (login) => {
                    assert.equal(await login.title(), 'Sign in');
                    assert.equal(await login.locator('#client-name').innerText(), 'mcp-oauth-guard demo client');
                    await login.screenshot({ path: screenshot, fullPage: true });
                    await login.fill('input[name=login]', DEMO_USERNAME);
                    await login.fill('input[name=password]', `${DEMO_PASSWORD}-wrong`);
                    const [response] = await Promise.all([
                      login.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/login')),
                      login.click('button#submit'),
                    ]);
                    loginErrorStatus = response.status();
                    await login.locator('#error').waitFor();
                  }
                : undefined,
          }),
        );
      },
    });

    try {
      await client.connect();

      // The wrong password was refused on the login page itself, and the form stayed to try again.
      assert.equal(loginErrorStatus, 401);
      const png = await readFile(screenshot);
      assert.ok(png.length > 1000, `screenshot is ${png.length} bytes`);
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG signature');

      assert.equal(walks.length, 1);
      assert.deepEqual(walks[0]!.pages, ['login', 'login', 'consent', 'callback']);
      assert.deepEqual(walks[0]!.consentScopes, ['notes:read']);
      const first = new URL(authorizationUrls[0]!);
      assert.equal(first.origin, as.issuer);
      assert.equal(first.searchParams.get('resource'), notes.url);
      assert.equal(first.searchParams.get('code_challenge_method'), 'S256');

      const claims = client.accessTokenClaims;
      assert.ok(claims, 'the access token is a JWT');
      assert.equal(claims.aud, notes.url);
      assert.equal(claims.iss, as.issuer);
      assert.equal(claims.sub, as.users.get(DEMO_USERNAME)!.accountId);
      assert.ok(String(claims.scope).split(' ').includes('notes:read'), `scope ${String(claims.scope)}`);
      assert.ok(!String(claims.scope).split(' ').includes('notes:write'), 'nothing beyond the challenge yet');

      // The guard filters tools/list by the token's scopes: read access sees no write or admin tools.
      const tools = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ['notes_list', 'whoami']);

      // notes_add needs notes:write: the client gets 403 insufficient_scope and opens the browser again.
      const added = (await client.callTool('notes_add', { text: 'written from Chromium' })) as {
        content: Array<{ text: string }>;
        isError?: boolean;
      };
      assert.equal(added.isError, undefined);
      assert.equal(added.content[0]!.text, 'added note #1');
      assert.ok(events.some((event) => event.step === 'step-up'), 'the client stepped up');

      assert.equal(walks.length, 2);
      // The AS session cookie from the first sign-in usually skips the login page; either way ends in consent
      // for just the scope not yet granted.
      const second = walks[1]!.pages;
      assert.ok(
        JSON.stringify(second) === '["consent","callback"]' || JSON.stringify(second) === '["login","consent","callback"]',
        `second authorization went ${second.join(' → ')}`,
      );
      assert.deepEqual(walks[1]!.consentScopes, ['notes:write']);
      const stepped = client.accessTokenClaims!;
      assert.equal(stepped.aud, notes.url);
      assert.deepEqual(String(stepped.scope).split(' ').sort(), ['notes:read', 'notes:write']);
      assert.deepEqual(notes.store.list(ownerKey(as.issuer, String(stepped.sub))), ['written from Chromium']);
      passed = true;
    } finally {
      await client.close();
    }
  });
});
