/**
 * Bringing the user to the authorization server: the system browser, a URL printed for the user to open,
 * or the scripted headless user (CI, no display).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { DEMO_PASSWORD, DEMO_USERNAME } from '../dev/authorization-server.js';
import { signInToDevelopmentServer, type CookieJar } from 'mcp-oauth-guard/client';
import type { EmitTranscript } from './transcript.js';

/** How the user is brought to the authorization server. */
export type AuthorizationMode = 'headless' | 'browser' | 'manual';

/** Default {@link AuthorizationMode}: headless on CI or without a display, the system browser otherwise. */
export function defaultAuthorizationMode(env: NodeJS.ProcessEnv = process.env, platform = process.platform): AuthorizationMode {
  if (env.CI) return 'headless';
  if (platform === 'darwin' || platform === 'win32') return 'browser';
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'browser' : 'headless';
}

/** Opens a URL for the user; may resolve to why it could not (then the URL is printed for the user to open). */
export type OpenBrowser = (url: string) => void | string | undefined | Promise<void | string | undefined>;

/** How long the opener may take to say it failed; one still running after that is taken to have worked. */
const OPENER_VERDICT_MS = 3_000;

/**
 * Opens a URL with `open`, `start` or `xdg-open`, without waiting for the browser itself. Resolves to why it
 * could not (the opener is missing, or exited with an error, as `xdg-open` does on a machine with no browser),
 * or `undefined` once it exited cleanly or is still running after a few seconds.
 */
export function openWithSystemBrowser(url: string): Promise<string | undefined> {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? // cmd reads `&` as "and then": the URL's query would be cut at its first parameter.
          ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    const settle = (why: string | undefined): void => {
      clearTimeout(timer);
      // An opener still running (a browser it waits for) must not keep the demo alive.
      child.unref();
      resolve(why);
    };
    const timer = setTimeout(() => settle(undefined), OPENER_VERDICT_MS);
    child.on('error', (error: NodeJS.ErrnoException) => settle(`${command} could not be started (${error.code ?? error.message})`));
    child.on('exit', (code, signal) => settle(code === 0 ? undefined : `${command} exited with ${code === null ? `signal ${signal}` : `code ${code}`}`));
  });
}

/** Options of {@link sendUserToAuthorize}. */
export interface SignInOptions {
  mode: AuthorizationMode;
  /** The client's redirect URI; the headless user stops there. */
  redirectUri: string;
  /** Credentials the headless user signs in with. Default: the demo user. */
  user?: { username: string; password: string };
  /** The headless user's cookies, kept across authorizations so a signed-in session skips the login page. */
  cookies: CookieJar;
  /**
   * Opens a URL for the user in `browser` mode; may resolve to why it could not, and the URL is then printed for
   * the user to open. Default: {@link openWithSystemBrowser}.
   */
  openBrowser?: OpenBrowser;
}

/**
 * Sends the user to the authorization URL. Returns once the headless user has been redirected back, or once
 * the browser was opened or the URL printed; the redirect itself arrives on the loopback listener.
 */
export async function sendUserToAuthorize(authorizationUrl: URL, options: SignInOptions, emit: EmitTranscript): Promise<void> {
  if (options.mode === 'headless') {
    const user = options.user ?? { username: DEMO_USERNAME, password: DEMO_PASSWORD };
    await signInToDevelopmentServer(authorizationUrl, {
      ...user,
      redirectUri: options.redirectUri,
      cookies: options.cookies,
      onStep: (step) =>
        emit('user', `headless user: ${step.method} ${new URL(step.url).pathname} → ${step.status}${step.page ? ` (${step.page} page)` : ''}`),
    });
  } else if (options.mode === 'browser') {
    const failure = await (options.openBrowser ?? openWithSystemBrowser)(authorizationUrl.href);
    if (typeof failure === 'string') {
      emit('user', `could not open a browser: ${failure}. Open this URL in a browser: ${authorizationUrl.href}`);
    } else {
      emit('user', 'opened the system browser; waiting for the redirect');
    }
  } else {
    emit('user', `open this URL in a browser: ${authorizationUrl.href}`);
  }
}
