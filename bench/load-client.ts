/**
 * The parent's side of the load process (`bench/load.ts`): each command is sent with an id and answered
 * with the same id.
 */
import type { ChildProcess } from 'node:child_process';
import { waitFor } from './processes.js';
import type { LoadCommand, LoadReport, RunRequest, RunSummary } from './scenario.js';

let nextId = 1;

export class LoadProcess {
  constructor(
    private readonly child: ChildProcess,
    private readonly connections: number,
  ) {}

  /** Starts `child` (a load process) and waits for its issuer URL. */
  static async ready(child: ChildProcess, connections: number): Promise<{ load: LoadProcess; issuer: string }> {
    const issuer = await waitFor<LoadReport, string>(child, 'load process', (m) => (m.type === 'issuer' ? m.issuer : undefined), 30_000);
    return { load: new LoadProcess(child, connections), issuer };
  }

  private ask<T>(command: LoadCommand & { id: number }, what: string, pick: (m: LoadReport) => T | undefined, timeoutMs?: number): Promise<T> {
    const answer = waitFor<LoadReport, T>(this.child, what, (m) => ('id' in m && m.id === command.id ? pick(m) : undefined), timeoutMs);
    this.child.send(command);
    return answer;
  }

  mint(resource: string, count: number): Promise<{ count: number; ms: number }> {
    return this.ask({ type: 'mint', id: nextId++, resource, count }, 'minting tokens', (m) => (m.type === 'minted' ? m : undefined));
  }

  /**
   * Mints the reused token for `resource` (kept by the load process; runs name it by `tokenResource`), once; resolves
   * with the user it names, its `iss` and `sub` (e.g. to store a connection for that user).
   */
  token(resource: string, claims?: Record<string, unknown>): Promise<{ issuer: string; subject: string }> {
    return this.ask({ type: 'token', id: nextId++, resource, ...(claims === undefined ? {} : { claims }) }, 'minting a token', (m) => (m.type === 'token' ? { issuer: m.issuer, subject: m.subject } : undefined));
  }

  /** Opens `count` MCP sessions at `url`, each with its own token for `tokenResource` (see `RunRequest.sessions`). */
  sessions(url: string, count: number, tokenResource: string): Promise<void> {
    return this.ask({ type: 'sessions', id: nextId++, url, count, tokenResource }, `opening ${count} sessions at ${url}`, (m) => (m.type === 'sessions' ? m : undefined), 60_000 + count * 10_000).then(() => undefined);
  }

  /** Ends the sessions opened at `url`. */
  closeSessions(url: string): Promise<void> {
    return this.ask({ type: 'closeSessions', id: nextId++, url }, `closing the sessions at ${url}`, (m) => (m.type === 'sessions' ? m : undefined), 30_000).then(() => undefined);
  }

  /** A new client's first request at `url`, in a session of its own (see `firstRequest` in `scenario.ts`): its answer and time. */
  firstRequest(url: string, tokenResource: string, body: string): Promise<{ ms: number; status: number; body: string }> {
    return this.ask({ type: 'firstRequest', id: nextId++, url, tokenResource, body }, `first request at ${url}`, (m) => (m.type === 'firstAnswered' ? m : undefined), 60_000);
  }

  /** One request at `url` (the reused token for `tokenResource`, or the first session's): its answer, and its time in ms from sending to the last byte. */
  probe(url: string, options: { body?: string; headers?: Record<string, string>; tokenResource?: string; session?: boolean } = {}): Promise<{ status: number; body: string; ms: number }> {
    return this.ask({ type: 'probe', id: nextId++, url, ...options }, `probing ${url}`, (m) => (m.type === 'probed' ? m : undefined));
  }

  run(request: Omit<RunRequest, 'connections'>): Promise<RunSummary> {
    return this.ask(
      { type: 'run', id: nextId++, run: { ...request, connections: this.connections } },
      `load run (${request.scenario})`,
      (m) => (m.type === 'result' ? m.summary : undefined),
      request.durationSeconds * 1_000 + 60_000,
    );
  }
}
