// A real nginx for tests: a load balancer in front of several upstreams, round robin with no stickiness and
// streaming-friendly (no buffering, HTTP/1.1 keep-alive to the upstreams, a long read timeout), as docs/fleet.md
// shows. It runs in the foreground with a temporary prefix on a loopback port; `stop` ends it and removes the
// directory. Tests skip (with the reason) when nginx is not installed; CI installs Debian's nginx-light.
import { spawn, type ChildProcess } from './child-process.js';
import { once } from 'node:events';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acceptsConnections, freePort } from './free-port.js';
import { findOnPath } from './stdio-gateway.js';

/** The nginx program (Debian puts it in /usr/sbin, often not on a user's PATH), or undefined. */
export const NGINX = findOnPath('nginx') ?? ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find(isExecutable);

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A running nginx. */
export interface TestNginx {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The access log's lines so far: `<upstream address> <status> <method> <uri>`, one per request. */
  accessLog(): string[];
  /** Stops nginx (SIGTERM, its fast shutdown, then SIGKILL) and removes its directory. */
  stop(): Promise<void>;
}

/**
 * The configuration: one `upstream` block with every server (round robin, nginx's default, no `ip_hash` or
 * `hash`: consecutive requests of one session go to different servers), keep-alive to them, and no buffering
 * so that event streams pass event by event.
 */
function config(dir: string, port: number, upstreams: readonly string[]): string {
  const servers = upstreams.map((u) => `    server ${new URL(u).host} max_fails=0;`).join('\n');
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  log_format upstreams '$upstream_addr $status $request_method $request_uri';
  access_log ${dir}/access.log upstreams;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream mcp_gateways {
${servers}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://mcp_gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      # Which replica answered, for the tests (and for an operator's debugging).
      add_header X-Upstream-Addr $upstream_addr always;
    }
  }
}
`;
}

/**
 * Starts nginx on `port` (or a free one) in front of `upstreams` (base URLs, e.g. `http://127.0.0.1:8081`);
 * resolves once it accepts connections (at most 10 s).
 *
 * @throws when nginx is not installed or does not start (with the last lines of its error log).
 */
export async function startTestNginx(upstreams: readonly string[], port?: number): Promise<TestNginx> {
  if (NGINX === undefined) throw new Error('nginx is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'guard-nginx-'));
  for (const sub of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
  const listenPort = port ?? (await freePort());
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, config(dir, listenPort, upstreams));
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-e', join(dir, 'error.log'), '-c', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    if (await acceptsConnections(listenPort)) {
      return {
        url: `http://127.0.0.1:${listenPort}`,
        port: listenPort,
        accessLog: () => readFileSync(join(dir, 'access.log'), 'utf8').split('\n').filter(Boolean),
        stop,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let errors = stderr.trim();
  try {
    errors = `${errors} ${readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-3).join(' | ')}`;
  } catch {
    // No log written.
  }
  await stop();
  throw new Error(`nginx did not start: ${errors || 'no error output'}`);
}
