/**
 * `npm run demo`: the whole OAuth flow for a remote MCP server, on one machine.
 *
 * 1. starts the embedded authorization server (oidc-provider) on 127.0.0.1;
 * 2. starts the notes MCP server behind mcp-oauth-guard as its own process, configured only through
 *    environment variables (MCP_AUTH_ISSUER, HOST, PORT), exactly as `npm run example` would;
 * 3. runs the PKCE demo client from nothing but the MCP URL: 401 → protected-resource metadata →
 *    authorization server discovery → dynamic registration → authorization code + PKCE with `resource` →
 *    token → filtered tools/list → whoami → notes_add (403, step-up, retry) → notes_list;
 * 4. prints a transcript of every step (tokens redacted) and stops everything.
 *
 * Flags: `--browser` signs in with your real browser instead of the scripted headless user. `--dpop` shows the
 * flow with DPoP (RFC 9449, MCP SEP-1932): the authorization server binds every token to a key of the client, the
 * guard runs with `MCP_AUTH_DPOP=require`, and each MCP request carries `Authorization: DPoP` and a fresh proof.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startAuthorizationServer, DEMO_PASSWORD, DEMO_SCOPES, DEMO_USERNAME, type AuthorizationServer } from '../dev/authorization-server.js';
import { McpOAuthClient } from './mcp-oauth-client.js';
import { formatTranscriptEvent } from './transcript.js';
import type { AuthorizationMode } from './user-sign-in.js';

const HOST = '127.0.0.1';
const DEMO_TIMEOUT_MS = 120_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Starts examples/notes-server.ts as a child process and resolves once it listens. */
function startNotesServerProcess(issuer: string, port: number, extraEnv: Record<string, string> = {}): Promise<ChildProcess> {
  const script = fileURLToPath(new URL('../notes-server.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, MCP_AUTH_ISSUER: issuer, HOST, PORT: String(port), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      // Never leave the child behind: the demo promises every process stopped.
      child.kill('SIGKILL');
      reject(new Error(`notes server did not start in time:\n${output}`));
    }, 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('notes MCP server:')) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(child);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`notes server exited with code ${code}:\n${output}`));
    });
  });
}

function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function heading(text: string): void {
  console.log(`\n=== ${text} ${'='.repeat(Math.max(0, 70 - text.length))}`);
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ text?: string }> })?.content;
  return content?.map((c) => c.text ?? '').join('\n') ?? JSON.stringify(result);
}

/** What `npm run demo -- --help` prints. */
const USAGE = `Usage: npm run demo [-- --browser] [-- --dpop]

Runs the whole OAuth flow of a remote MCP server on this machine: a local authorization server, the notes
MCP server behind mcp-oauth-guard, and a PKCE client that starts from the MCP URL alone. Prints every step
(tokens redacted) and stops everything.

  --browser   sign in with your own browser instead of the scripted headless user
  --dpop      DPoP-bound tokens (RFC 9449): the guard runs with MCP_AUTH_DPOP=require
  --help      this text`;

const DEMO_FLAGS = new Set(['--browser', '--dpop']);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(USAGE);
    return;
  }
  const unknown = args.filter((arg) => !DEMO_FLAGS.has(arg));
  if (unknown.length > 0) {
    console.error(`demo: unknown ${unknown.length === 1 ? 'argument' : 'arguments'} ${unknown.join(' ')}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const mode: AuthorizationMode = args.includes('--browser') ? 'browser' : 'headless';
  const dpop = args.includes('--dpop');
  let as: AuthorizationServer | undefined;
  let notes: ChildProcess | undefined;
  let client: McpOAuthClient | undefined;
  const watchdog = setTimeout(() => {
    console.error(`demo did not finish within ${DEMO_TIMEOUT_MS / 1000} s`);
    void stopProcess(notes).finally(() => process.exit(1));
  }, DEMO_TIMEOUT_MS);
  watchdog.unref();
  try {
    heading('1. Authorization server (oidc-provider, in-process)');
    as = await startAuthorizationServer({ host: HOST, requireDpop: dpop });
    const port = await freePort();
    const mcpUrl = `http://${HOST}:${port}/mcp`;
    as.addResource(mcpUrl, { scopes: DEMO_SCOPES });
    console.log(`issuer:      ${as.issuer}`);
    console.log(`demo user:   ${DEMO_USERNAME} / ${DEMO_PASSWORD}`);
    console.log(`resource:    ${mcpUrl} (scopes ${DEMO_SCOPES.join(' ')})`);
    if (dpop) console.log('DPoP:        required for every client (dpop_bound_access_tokens), RFC 9449');

    heading('2. Notes MCP server behind mcp-oauth-guard (own process, env only)');
    const dpopEnv: Record<string, string> = dpop ? { MCP_AUTH_DPOP: 'require' } : {};
    console.log(`MCP_AUTH_ISSUER=${as.issuer} HOST=${HOST} PORT=${port}${dpop ? ' MCP_AUTH_DPOP=require' : ''} npm run example`);
    notes = await startNotesServerProcess(as.issuer, port, dpopEnv);
    console.log(`listening:   ${mcpUrl}`);

    heading(`3. PKCE client, ${mode} sign-in${dpop ? ', DPoP-bound tokens' : ''}, starting from the MCP URL only`);
    client = new McpOAuthClient({ mcpUrl, mode, dpop, onEvent: (e) => console.log(formatTranscriptEvent(e)) });
    await client.connect();

    heading('4. tools/list (filtered by the token\'s scopes)');
    const tools = await client.listTools();
    console.log(`granted scope: ${client.grantedScope}`);
    console.log(`tools:         ${tools.map((t) => t.name).join(', ')}`);

    heading('5. tools/call whoami');
    console.log(textOf(await client.callTool('whoami')));
    if (dpop) console.log(`token bound to key (cnf.jkt): ${String((client.accessTokenClaims?.cnf as { jkt?: unknown } | undefined)?.jkt)}`);

    heading('6. tools/call notes_add (needs notes:write: 403, step-up, retry)');
    console.log(textOf(await client.callTool('notes_add', { text: 'Remember: the audience is the MCP server.' })));
    console.log(`granted scope now: ${client.grantedScope}`);

    heading('7. tools/call notes_list');
    console.log(textOf(await client.callTool('notes_list')));

    heading('Done: every step passed');
    // The demo's servers stop with it: what to run next must start its own authorization server.
    console.log(
      (dpop
        ? [
            'Next, keep a DPoP authorization server running and put a server behind the guard with DPoP required:',
            '  npm run auth-server -- --port 9400 --resource http://127.0.0.1:3000/mcp --scopes notes:read,notes:write,notes:admin --dpop',
            '  MCP_AUTH_ISSUER=http://127.0.0.1:9400 MCP_AUTH_DPOP=require PORT=3000 npm run example        # the notes server, in another terminal',
            '  or, for your own MCP server: npx mcp-oauth-guard --issuer http://127.0.0.1:9400 --resource http://127.0.0.1:3000/mcp --port 3000 --dpop require --upstream <its URL>',
            '  npx tsx examples/demo/pkce-client.ts http://127.0.0.1:3000/mcp --dpop --call whoami   # sign in, bind the token, prove the key',
          ]
        : [
            'Next, keep an authorization server running and put a server behind the guard:',
            '  npm run auth-server -- --port 9400 --resource http://127.0.0.1:3000/mcp --scopes notes:read,notes:write,notes:admin',
            '  MCP_AUTH_ISSUER=http://127.0.0.1:9400 PORT=3000 npm run example        # the notes server, in another terminal',
            '  or, for your own MCP server: npx mcp-oauth-guard --issuer http://127.0.0.1:9400 --resource http://127.0.0.1:3000/mcp --port 3000 --upstream <its URL>',
            '  npm run -s token -- --resource http://127.0.0.1:3000/mcp --scope notes:read   # a token for curl',
          ]
      ).join('\n'),
    );
  } finally {
    await client?.close().catch(() => {});
    await stopProcess(notes);
    await as?.close();
    clearTimeout(watchdog);
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(`\ndemo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
