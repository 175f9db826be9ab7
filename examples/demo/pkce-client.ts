/**
 * The demo PKCE client on the command line: authorizes against whatever authorization server the MCP
 * server names (see `mcp-oauth-client.ts` for the steps), lists the tools, optionally calls one, and prints
 * the transcript (tokens redacted).
 *
 * CLI: `tsx examples/demo/pkce-client.ts <mcp-url> [--headless|--browser|--manual] [--dpop] [--scope "<scopes>"]
 * [--client-id <id>] [--call <tool> [--args '<json>']]`. `--dpop`: DPoP-bound tokens (RFC 9449), every MCP request
 * `Authorization: DPoP` with a fresh proof.
 *
 * @module
 */
import { pathToFileURL } from 'node:url';
import { runPkceClientFlow } from './run-pkce-client-flow.js';
import { formatTranscriptEvent } from './transcript.js';
import type { AuthorizationMode } from './user-sign-in.js';

async function main(argv: string[]): Promise<void> {
  const args = [...argv];
  const take = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    if (at === -1) return undefined;
    const [, value] = args.splice(at, 2);
    return value;
  };
  const has = (flag: string): boolean => {
    const at = args.indexOf(flag);
    if (at !== -1) args.splice(at, 1);
    return at !== -1;
  };
  const mode: AuthorizationMode | undefined = has('--headless') ? 'headless' : has('--browser') ? 'browser' : has('--manual') ? 'manual' : undefined;
  const dpop = has('--dpop');
  const scope = take('--scope');
  const clientId = take('--client-id');
  const callName = take('--call');
  const callArgs = take('--args');
  const [mcpUrl] = args;
  if (!mcpUrl) {
    console.error('usage: tsx examples/demo/pkce-client.ts <mcp-url> [--headless|--browser|--manual] [--dpop] [--scope "<scopes>"] [--client-id <id>] [--call <tool> [--args \'<json>\']]');
    process.exitCode = 2;
    return;
  }
  const result = await runPkceClientFlow({
    mcpUrl,
    mode,
    dpop,
    scope,
    clientId,
    onEvent: (event) => console.log(formatTranscriptEvent(event)),
    ...(callName ? { call: { name: callName, arguments: callArgs ? (JSON.parse(callArgs) as Record<string, unknown>) : {} } } : {}),
  });
  console.log(`tools: ${result.tools.map((tool) => tool.name).join(', ') || '(none)'}`);
  if (callName) console.log(`${callName} →`, JSON.stringify(result.callResult, null, 2));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    // An authorization server's refusal (openid-client's ResponseBodyError) says why in its error fields.
    const { error: code, error_description: description } = (error ?? {}) as { error?: unknown; error_description?: unknown };
    const why = typeof code === 'string' ? `: ${code}${typeof description === 'string' ? ` (${description})` : ''}` : '';
    console.error(`${error instanceof Error ? error.message : String(error)}${why}`);
    process.exitCode = 1;
  });
}
