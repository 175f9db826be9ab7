// Headless Chromium for the tests that need the browser a person would use, through playwright-core. The browser is
// Debian's `chromium` found on PATH; browsers are never downloaded. .ci/run installs the package when it is missing,
// so under CI a missing browser fails the run; elsewhere a suite needing it is skipped with the reason shown.
import { chromium, type Browser } from 'playwright-core';
import { findOnPath } from './stdio-gateway.js';

/**
 * Headless without a GPU or sandbox (containers), and nothing that phones home or updates itself, so a run needs
 * no network beyond 127.0.0.1.
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** The Chromium executable on PATH (`chromium`, then `chromium-browser`), like `which`. */
export const CHROMIUM_PATH: string | undefined = findOnPath('chromium') ?? findOnPath('chromium-browser');

/** Why Chromium cannot be used, or undefined when it can. */
export const MISSING_CHROMIUM: string | undefined = CHROMIUM_PATH
  ? undefined
  : "Chromium not found on PATH (looked for chromium, then chromium-browser); install Debian's chromium package (.ci/run does)";

/** The `skip` of a suite that needs Chromium: the reason when it is missing outside CI (under CI its absence fails). */
export const CHROMIUM_SKIP: string | false = (!process.env.CI && MISSING_CHROMIUM) || false;

/** Launches headless Chromium; throws the reason when it is missing (under CI a broken environment, not a skip). */
export function launchChromium(): Promise<Browser> {
  if (!CHROMIUM_PATH) throw new Error(MISSING_CHROMIUM);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_FLAGS], timeout: 30_000 });
}
