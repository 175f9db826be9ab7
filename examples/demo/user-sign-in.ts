/**
 * Bringing the user to the authorization server: the system browser, a URL printed for the user to open,
 * or the scripted headless user (CI, no display).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { DEMO_PASSWORD, DEMO_USERNAME } from '../../test/fixtures/authorization-server.js';
import { authorizeAsHeadlessUser, type CookieJar } from './headless-user.js';
import type { EmitTranscript } from './transcript.js';

/** How the user is brought to the authorization server. */
export type AuthorizationMode = 'headless' | 'browser' | 'manual';

/** Default {@link AuthorizationMode}: headless on CI or without a display, the system browser otherwise. */
export function defaultAuthorizationMode(env: NodeJS.ProcessEnv = process.env, platform = process.platform): AuthorizationMode {
  if (env.CI) return 'headless';
  if (platform === 'darwin' || platform === 'win32') return 'browser';
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'browser' : 'headless';
}

/** Opens a URL with `open`, `start` or `xdg-open`, without waiting for the browser. */
export function openWithSystemBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  child.unref();
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
  /** Opens a URL for the user in `browser` mode. Default: {@link openWithSystemBrowser}. */
  openBrowser?: (url: string) => void | Promise<void>;
}

/**
 * Sends the user to the authorization URL. Returns once the headless user has been redirected back, or once
 * the browser was opened or the URL printed; the redirect itself arrives on the loopback listener.
 */
export async function sendUserToAuthorize(authorizationUrl: URL, options: SignInOptions, emit: EmitTranscript): Promise<void> {
  if (options.mode === 'headless') {
    const user = options.user ?? { username: DEMO_USERNAME, password: DEMO_PASSWORD };
    await authorizeAsHeadlessUser(authorizationUrl, {
      ...user,
      redirectUri: options.redirectUri,
      cookies: options.cookies,
      onStep: (step) =>
        emit('user', `headless user: ${step.method} ${new URL(step.url).pathname} → ${step.status}${step.page ? ` (${step.page} page)` : ''}`),
    });
  } else if (options.mode === 'browser') {
    await (options.openBrowser ?? openWithSystemBrowser)(authorizationUrl.href);
    emit('user', 'opened the system browser; waiting for the redirect');
  } else {
    emit('user', `open this URL in a browser: ${authorizationUrl.href}`);
  }
}
