/**
 * nginx as the reference hop: `proxy_pass` to the upstream over pooled keep-alive connections, no
 * authentication, one process in the foreground (`daemon off`, `master_process off`), every file it writes
 * (pid, error and access logs, temporary files) in a temporary directory removed on exit.
 *
 * When `nginx` is not installed and the benchmark runs as root, Debian's `nginx-light` is installed with
 * apt-get; otherwise the nginx line is skipped with the reason.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { acceptsConnections, freePort } from '../test/helpers/free-port.js';
import { onExit, startProgram } from './processes.js';
import { findServerProgram } from './server-program.js';

/** The nginx binary (Debian's `nginx-light` when it must be installed), its path and version; or why there is none. */
export function findNginx(log: (line: string) => void): { path: string; version: string } | { why: string } {
  return findServerProgram(
    {
      program: 'nginx',
      pkg: 'nginx-light',
      dirs: ['/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'],
      versionArgs: ['-v'],
      // `nginx -v` writes its version to stderr.
      version: ({ stderr }) => stderr.trim().replace(/^nginx version: /, ''),
    },
    log,
  );
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
