// Bringing the user to the authorization server: when no browser can be opened, the demo says so and prints the
// URL instead of waiting, silent, for a redirect that will never come.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openWithSystemBrowser, sendUserToAuthorize } from '../../examples/demo/user-sign-in.js';

const URL_TO_OPEN = new URL('http://127.0.0.1:9/authorize?client_id=demo');

describe('the system browser', { skip: process.platform !== 'linux' ? 'xdg-open is the opener on Linux only' : false }, () => {
  let bin: string;
  let path: string | undefined;
  before(() => {
    bin = mkdtempSync(join(tmpdir(), 'opener-'));
    path = process.env.PATH;
  });
  after(() => {
    process.env.PATH = path;
    rmSync(bin, { recursive: true, force: true });
  });
  const opener = (script: string): void => {
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\n${script}\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    process.env.PATH = `${bin}:${path ?? ''}`;
  };

  it('an opener that fails, as xdg-open does with no browser, is reported with its exit code', async () => {
    opener('exit 3');
    assert.equal(await openWithSystemBrowser(URL_TO_OPEN.href), 'xdg-open exited with code 3');
  });
  it('a missing opener is reported', async () => {
    process.env.PATH = bin; // no xdg-open in it
    rmSync(join(bin, 'xdg-open'), { force: true });
    assert.match((await openWithSystemBrowser(URL_TO_OPEN.href)) ?? '', /^xdg-open could not be started \(ENOENT\)/);
  });
  it('an opener that succeeds, or is still running after a few seconds, counts as opened', async () => {
    opener('exit 0');
    assert.equal(await openWithSystemBrowser(URL_TO_OPEN.href), undefined);
    opener('exec sleep 3.3'); // past the 3 s verdict, and gone soon after it
    const started = Date.now();
    assert.equal(await openWithSystemBrowser(URL_TO_OPEN.href), undefined);
    assert.ok(Date.now() - started < 5_000, 'not waiting for the browser to close');
  });
});

describe('sendUserToAuthorize in browser mode', () => {
  const run = async (openBrowser: () => string | undefined): Promise<string[]> => {
    const lines: string[] = [];
    await sendUserToAuthorize(URL_TO_OPEN, { mode: 'browser', redirectUri: 'http://127.0.0.1:9/callback', cookies: new Map(), openBrowser }, (_who, text) => lines.push(text));
    return lines;
  };
  it('prints the URL to open, and why, when no browser could be opened', async () => {
    const [line] = await run(() => 'xdg-open exited with code 3');
    assert.equal(line, `could not open a browser: xdg-open exited with code 3. Open this URL in a browser: ${URL_TO_OPEN.href}`);
  });
  it('says it opened the browser otherwise', async () => {
    assert.deepEqual(await run(() => undefined), ['opened the system browser; waiting for the redirect']);
  });
});
