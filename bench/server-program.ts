/**
 * The servers the benchmark starts as programs (nginx, redis-server): found on PATH or in their usual
 * directories, or installed from Debian's packages when missing (only on Linux, as root, with apt-get);
 * otherwise the caller skips its line and prints the reason returned here.
 */
import { spawnSync } from 'node:child_process';
import { run, which } from './processes.js';

const INSTALL_TIMEOUT_MS = 240_000;

/** A server program and the Debian package that provides it. */
export interface ServerProgram {
  /** The program's file name (`nginx`). */
  program: string;
  /** The package to install when it is missing (`nginx-light`). */
  pkg: string;
  /** Directories searched besides PATH (sbin directories are often not on it). */
  dirs: readonly string[];
  /** Arguments that make it print its version and exit 0 (`-v`). */
  versionArgs: readonly string[];
  /** The version, from what those arguments printed. */
  version: (printed: { stdout: string; stderr: string }) => string;
}

/** The program's path and version, installing it when that is possible; or why there is none. */
export function findServerProgram(server: ServerProgram, log: (line: string) => void): { path: string; version: string } | { why: string } {
  let path = which(server.program, server.dirs);
  if (path === undefined) {
    const why = installDebianPackage(server.pkg, server.program, log);
    if (why !== undefined) return { why };
    path = which(server.program, server.dirs);
    if (path === undefined) return { why: `${server.pkg} was installed but no ${server.program} binary was found` };
  }
  const probe = spawnSync(path, [...server.versionArgs], { encoding: 'utf8', timeout: 10_000 });
  if (probe.status !== 0) return { why: `${path} ${server.versionArgs.join(' ')} failed: ${(probe.stderr || String(probe.error ?? probe.signal)).trim()}` };
  return { path, version: server.version(probe) };
}

/**
 * Installs Debian package `pkg` (which provides `program`) with apt-get, fetching the package lists once if the
 * first attempt fails (a fresh machine has none). Returns undefined once installed, else why it was not.
 */
function installDebianPackage(pkg: string, program: string, log: (line: string) => void): string | undefined {
  if (process.platform !== 'linux' || typeof process.getuid !== 'function' || process.getuid() !== 0) {
    return `${program} is not installed and the benchmark is not running as root (install it, e.g. apt-get install ${pkg})`;
  }
  if (which('apt-get') === undefined) return `${program} is not installed and there is no apt-get to install it with`;
  log(`bench: ${program} is not installed; installing Debian's ${pkg} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): void => void run('apt-get', ['install', '-y', '--no-install-recommends', pkg], INSTALL_TIMEOUT_MS, env);
  try {
    try {
      install();
    } catch {
      // Package lists not fetched yet (a fresh machine): fetch them once, then try again.
      run('apt-get', ['update'], INSTALL_TIMEOUT_MS, env);
      install();
    }
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-2).join(' ') ?? String(error);
    return `installing ${pkg} failed: ${detail}`;
  }
  return undefined;
}
