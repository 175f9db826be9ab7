import { EXPOSED_NAME_SEPARATOR } from '../../core/mcp/exposed-names.js';
import type { JsonRpcId } from '../../core/wire/jsonrpc.js';

/**
 * Ids of requests a server sends the client (sampling, elicitation, roots) as the client sees them: prefixed with
 * the server's name, so that two servers' ids never collide and the client's answer goes back to the server that
 * asked, with its own id. Stateless: any replica decodes them.
 *
 * @example
 * exposeRequestId('notes', 7); // 'notes__n7'
 * readRequestId('notes__n7'); // { server: 'notes', id: 7 }
 */
export function exposeRequestId(server: string, id: JsonRpcId): string {
  return `${server}${EXPOSED_NAME_SEPARATOR}${typeof id === 'number' ? `n${id}` : `s${id}`}`;
}

/** The server and its own id of an id {@link exposeRequestId} made; undefined for any other id. */
export function readRequestId(exposed: JsonRpcId | null): { server: string; id: JsonRpcId } | undefined {
  if (typeof exposed !== 'string') return undefined;
  const at = exposed.indexOf(EXPOSED_NAME_SEPARATOR);
  if (at <= 0) return undefined;
  const server = exposed.slice(0, at);
  const kind = exposed[at + EXPOSED_NAME_SEPARATOR.length];
  const rest = exposed.slice(at + EXPOSED_NAME_SEPARATOR.length + 1);
  if (kind === 's') return { server, id: rest };
  if (kind === 'n' && rest !== '' && Number.isFinite(Number(rest))) return { server, id: Number(rest) };
  return undefined;
}
