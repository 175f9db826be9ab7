// The loopback redirect listener, over real HTTP on 127.0.0.1: one redirect per wait, only with the state sent (a
// stray redirect is refused without ending the wait), a bounded wait, and the authorization server's error kept in
// its own words.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuthorizationRedirectError, LoopbackRedirectListener } from '../../src/client/index.js';

/** Follows the redirect as a browser would: the status and the page. */
async function visit(url: string): Promise<{ status: number; body: string; contentType: string | null }> {
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, body: await response.text(), contentType: response.headers.get('content-type') };
}

/** Whether `promise` has settled (either way) by the time the callbacks already due have run. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  const outcome = await Promise.race([promise.then(() => true, () => true), new Promise((resolve) => setImmediate(() => resolve(pending)))]);
  return outcome !== pending;
}

describe('LoopbackRedirectListener', () => {
  it('listens on 127.0.0.1 at a port the system picks, with the path asked for', async () => {
    const first = await LoopbackRedirectListener.listen();
    const second = await LoopbackRedirectListener.listen({ path: '/oauth/back' });
    try {
      assert.match(first.redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      assert.match(second.redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/oauth\/back$/);
      assert.notEqual(new URL(first.redirectUri).port, new URL(second.redirectUri).port);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('resolves the wait with the code of the redirect that brings its state back, once; a replay is answered 400', async () => {
    const listener = await LoopbackRedirectListener.listen();
    try {
      const code = listener.waitForCode('state-1');
      const page = await visit(`${listener.redirectUri}?code=abc&state=state-1`);
      assert.equal(page.status, 200);
      assert.match(page.body, /Signed in/);
      assert.equal(page.contentType, 'text/html; charset=utf-8');
      assert.equal(await code, 'abc');
      // The same redirect again: nothing waits for it any more.
      assert.equal((await visit(`${listener.redirectUri}?code=abc&state=state-1`)).status, 400);
      // A later wait is not settled by the replay of an earlier redirect either.
      const later = listener.waitForRedirect('state-2');
      assert.equal((await visit(`${listener.redirectUri}?code=abc&state=state-1`)).status, 400);
      assert.equal(await settledYet(later), false);
      assert.equal((await visit(`${listener.redirectUri}?code=def&state=state-2`)).status, 200);
      assert.equal((await later).searchParams.get('code'), 'def');
    } finally {
      await listener.close();
    }
  });

  it('answers 400 to a redirect with another state or none, and keeps waiting for the one that brings its state', async () => {
    const listener = await LoopbackRedirectListener.listen();
    try {
      const code = listener.waitForCode('the-state');
      // Any web page can send the browser to the loopback URL: it must not end the sign-in in progress.
      const stray = await visit(`${listener.redirectUri}?code=forged&state=other`);
      assert.equal(stray.status, 400);
      assert.match(stray.body, /No sign-in is waiting for this redirect/);
      assert.equal((await visit(`${listener.redirectUri}?code=forged`)).status, 400);
      assert.equal((await visit(`${listener.redirectUri}?error=access_denied&state=`)).status, 400);
      assert.equal(await settledYet(code), false);
      assert.equal((await visit(`${listener.redirectUri}?code=real&state=the-state`)).status, 200);
      assert.equal(await code, 'real');
    } finally {
      await listener.close();
    }
  });

  it('answers 404 off its path and to other methods, and keeps waiting', async () => {
    const listener = await LoopbackRedirectListener.listen();
    try {
      const redirect = listener.waitForRedirect('s');
      const origin = new URL(listener.redirectUri).origin;
      assert.equal((await visit(`${origin}/favicon.ico`)).status, 404);
      assert.equal((await fetch(`${listener.redirectUri}?code=x&state=s`, { method: 'POST' })).status, 404);
      await visit(`${listener.redirectUri}?code=x&state=s`);
      // The URL is the redirect URI itself, port included: a code exchange derives `redirect_uri` from it.
      const arrived = await redirect;
      assert.equal(`${arrived.origin}${arrived.pathname}`, listener.redirectUri);
      assert.equal(arrived.searchParams.get('code'), 'x');
    } finally {
      await listener.close();
    }
  });

  it("rejects with the authorization server's error, error_description and error_uri", async () => {
    const listener = await LoopbackRedirectListener.listen();
    try {
      const code = listener.waitForCode('s');
      const page = await visit(`${listener.redirectUri}?${new URLSearchParams({ error: 'access_denied', error_description: 'no scope requested', error_uri: 'https://as.example/errors/1', state: 's' })}`);
      assert.equal(page.status, 200);
      assert.match(page.body, /refused/);
      const error = await code.then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof AuthorizationRedirectError);
      assert.equal(error.error, 'access_denied');
      assert.equal(error.errorDescription, 'no scope requested');
      assert.equal(error.errorUri, 'https://as.example/errors/1');
      assert.equal(error.message, 'the authorization server refused: access_denied: no scope requested (see https://as.example/errors/1)');
    } finally {
      await listener.close();
    }
  });

  it('says so when the authorization server gave no error_description', () => {
    const error = AuthorizationRedirectError.fromRedirect(new URL('http://127.0.0.1:1/callback?error=access_denied&state=s'));
    assert.equal(error?.message, 'the authorization server refused: access_denied (the authorization server gave no error_description)');
    assert.equal(AuthorizationRedirectError.fromRedirect(new URL('http://127.0.0.1:1/callback?code=c&state=s')), undefined);
  });

  it('fails a wait that sees no redirect in time, one a newer wait replaces, and one pending at close', async () => {
    const listener = await LoopbackRedirectListener.listen({ timeoutMs: 50 });
    const started = Date.now();
    await assert.rejects(listener.waitForRedirect('s'), /no redirect came back to http:\/\/127\.0\.0\.1:\d+\/callback within 50 ms/);
    assert.ok(Date.now() - started < 5_000);
    const replaced = listener.waitForRedirect('a');
    const newer = listener.waitForRedirect('b');
    await assert.rejects(replaced, /a newer sign-in replaced this one/);
    await listener.close();
    await assert.rejects(newer, /closed/);
    await assert.rejects(listener.waitForRedirect('c'), /closed/);
    await assert.rejects(fetch(listener.redirectUri), /fetch failed/);
  });

  it('refuses a path and a time limit it cannot use, and an empty state', async () => {
    await assert.rejects(LoopbackRedirectListener.listen({ path: 'callback' }), TypeError);
    await assert.rejects(LoopbackRedirectListener.listen({ path: '//evil.example/x' }), TypeError);
    await assert.rejects(LoopbackRedirectListener.listen({ timeoutMs: 0 }), /timeoutMs must be a positive whole number/);
    await assert.rejects(LoopbackRedirectListener.listen({ timeoutMs: Number.NaN }), TypeError);
    const listener = await LoopbackRedirectListener.listen();
    try {
      assert.throws(() => listener.waitForRedirect(''), TypeError);
    } finally {
      await listener.close();
    }
  });
});
