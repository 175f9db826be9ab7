/**
 * nginx as the reference hop: `proxy_pass` to the upstream over pooled keep-alive connections, no
 * authentication, one process in the foreground (`daemon off`, `master_process off`), every file it writes
 * (pid, error and access logs, temporary files) in a temporary directory removed on exit.
 *
 * When `nginx` is not installed and the benchmark runs as root, Debian's `nginx-light` is installed with
 * apt-get; otherwise the nginx line is skipped with the reason.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { acceptsConnections, freePort } from '../test/helpers/free-port.js';
import { onExit, run, startProgram, which } from './processes.js';

const NGINX_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'];
const INSTALL_TIMEOUT_MS = 240_000;

/** The nginx binary, installing it when that is possible; or why there is none. */
export function findNginx(log: (line: string) => void): { path: string; version: string } | { why: string } {
  let path = which('nginx', NGINX_DIRS);
  if (path === undefined) {
    if (process.platform !== 'linux' || typeof process.getuid !== 'function' || process.getuid() !== 0) {
      return { why: 'nginx is not installed and the benchmark is not running as root (install nginx, e.g. apt-get install nginx-light)' };
    }
    if (which('apt-get') === undefined) return { why: 'nginx is not installed and there is no apt-get to install it with' };
    log('bench: nginx is not installed; installing Debian\'s nginx-light with apt-get');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = (): void => void run('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], INSTALL_TIMEOUT_MS, env);
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
      return { why: `installing nginx-light failed: ${detail}` };
    }
    path = which('nginx', NGINX_DIRS);
    if (path === undefined) return { why: 'nginx-light was installed but no nginx binary was found' };
  }
  // `nginx -v` writes its version to stderr.
  const probe = spawnSync(path, ['-v'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.status !== 0) return { why: `${path} -v failed: ${(probe.stderr || String(probe.error ?? probe.signal)).trim()}` };
  return { path, version: probe.stderr.trim().replace(/^nginx version: /, '') };
}

/** The configuration: one worker, keep-alive both ways, buffers large enough that no answer goes to disk. */
function config(dir: string, port: number, upstream: URL): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  # Logged as a reverse proxy usually is: one line per request, written 64 KB at a time.
  access_log ${dir}/access.log combined buffer=64k flush=1s;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_timeout 60s;
  keepalive_requests 1000000;
  upstream mcp_upstream {
    server ${upstream.hostname}:${upstream.port};
    keepalive 64;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mcp_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 16k;
      proxy_buffers 16 16k;
      proxy_busy_buffers_size 32k;
      proxy_max_temp_file_size 0;
    }
  }
}
`;
}

/** A running nginx hop. */
export interface NginxHop {
  child: ChildProcess;
  /** Its MCP endpoint URL (the upstream's path). */
  url: string;
}

/** Starts nginx in front of `upstream`, pinned to `cpu`; resolves once it accepts connections. */
export async function startNginx(binary: string, upstreamUrl: string, cpu: number | undefined): Promise<NginxHop> {
  const dir = mkdtempSync(join(os.tmpdir(), 'mcp-bench-nginx-'));
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  for (const sub of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
  const upstream = new URL(upstreamUrl);
  const port = await freePort();
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, config(dir, port, upstream));
  const child = startProgram(binary, ['-p', dir, '-e', join(dir, 'error.log'), '-c', file], cpu);
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    if (await acceptsConnections(port)) return { child, url: `http://127.0.0.1:${port}${upstream.pathname}` };
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let errors = '';
  try {
    errors = readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-3).join(' | ');
  } catch {
    // No log written.
  }
  child.kill('SIGKILL');
  throw new Error(`nginx did not start (${child.exitCode ?? child.signalCode ?? 'no answer in 10 s'}): ${errors || 'no error log'}`);
}
