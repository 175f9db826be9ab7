// Shared by the stdio upstream tests: the raw stdio servers in test/fixtures/stdio/, how to tell whether a
// process is still running, and a gateway in front of a command with the test authorization server.
import { execFileSync } from './child-process.js';
import { accessSync, constants } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LATEST_SESSION_PROTOCOL_VERSION } from '../../src/core/mcp/protocol-version.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import type { StdioUpstream } from '../../src/gateway/upstream/stdio/stdio-upstream.js';
import type { AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { postMcp, send, type HttpAnswer } from './http-client.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const PYTHON_SERVER = resolve(ROOT, 'test/fixtures/stdio/server.py');
export const NODE_SERVER = resolve(ROOT, 'test/fixtures/stdio/server.mjs');
export const PROTOCOL_VERSION = LATEST_SESSION_PROTOCOL_VERSION;

/** A word of a command line, quoted for `splitCommandLine` (single quotes keep everything literally). */
export function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The full path of a program on PATH, or undefined. */
export function findOnPath(program: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const file = join(dir, program);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * The python3 interpreter itself: a wrapper on PATH (pyenv's shim is a shell script) would add variables of
 * its own to the environment the tests check.
 */
export function pythonInterpreter(): string | undefined {
  const onPath = findOnPath('python3');
  if (!onPath) return undefined;
  try {
    return execFileSync(onPath, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 10_000 }).trim() || onPath;
  } catch {
    return onPath;
  }
}

/** The two raw servers; Python only where python3 exists (CI installs it). */
export function stdioServers(): { name: string; command: string | undefined; skip: string | false }[] {
  const python = pythonInterpreter();
  return [
    { name: 'Python', command: python ? `${quote(python)} ${quote(PYTHON_SERVER)}` : undefined, skip: python ? false : 'python3 is not installed (.ci/run installs it)' },
    { name: 'Node', command: `${quote(process.execPath)} ${quote(NODE_SERVER)}`, skip: false },
  ];
}

/** Whether a process with this pid is running. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until the process is gone, up to `ms`; false if it is still running then. */
export async function waitUntilGone(pid: number, ms = 8_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** A gateway in front of `command`, its log lines kept. */
export async function startStdioGateway(
  as: AuthorizationServer,
  command: string,
  settings: Record<string, string> = {},
  scopes: readonly string[] = ['mcp:basic'],
): Promise<{ gateway: RunningGateway; upstream: StdioUpstream; logs: string[] }> {
  const logs: string[] = [];
  const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM_COMMAND: command, MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0', ...settings });
  const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
  as.addResource(gateway.resource, { scopes });
  return { gateway, upstream: gateway.proxy as StdioUpstream, logs };
}

/** The log events of the processes (`event` starts with `upstream_`). */
export function childEvents(logs: readonly string[]): Record<string, any>[] {
  return logs.map((l) => JSON.parse(l) as Record<string, any>).filter((e) => typeof e.event === 'string' && e.event.startsWith('upstream_'));
}

/** A 2025 MCP session through the gateway, by raw HTTP. */
export class RawSession {
  sessionId: string | undefined;
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  headers(): Record<string, string> {
    return { 'mcp-protocol-version': PROTOCOL_VERSION, ...(this.sessionId ? { 'mcp-session-id': this.sessionId } : {}) };
  }

  async initialize(): Promise<HttpAnswer> {
    const answer = await postMcp(this.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: { sampling: {} }, clientInfo: { name: 'raw', version: '1' } } }, this.token);
    const id = answer.headers['mcp-session-id'];
    if (typeof id === 'string') this.sessionId = id;
    if (answer.status === 200) await postMcp(this.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, this.token, this.headers());
    return answer;
  }

  post(message: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    return postMcp(this.url, message, this.token, { ...this.headers(), ...headers });
  }

  call(name: string, args: Record<string, unknown> = {}, id: number | string = 1, meta?: Record<string, unknown>): Promise<HttpAnswer> {
    return this.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
  }

  /** The text of a tool call's answer. */
  async text(name: string, args: Record<string, unknown> = {}): Promise<string> {
    const answer = await this.call(name, args);
    const text = answer.json?.result?.content?.[0]?.text;
    if (typeof text !== 'string') throw new Error(`${name}: ${answer.status} ${answer.text}`);
    return text;
  }

  delete(): Promise<HttpAnswer> {
    return send(this.url, { method: 'DELETE', headers: { authorization: `Bearer ${this.token}`, ...this.headers() } });
  }
}
