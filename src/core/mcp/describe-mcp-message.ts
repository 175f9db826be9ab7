import type { Span } from '@opentelemetry/api';
import { cutAttribute } from '../kernel/tracing.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import { MCP_METHODS } from './mcp-methods.js';

/**
 * Records the MCP facts of a JSON-RPC message on a recording span (`mcp.method.name`, `jsonrpc.request.id`,
 * `jsonrpc.protocol.version`; `gen_ai.tool.name` and `gen_ai.operation.name` for `tools/call`,
 * `gen_ai.prompt.name` for `prompts/get`, `mcp.resource.uri` when the request names one) and names it
 * `{mcp.method.name} {target}` as the MCP conventions say, the target being the tool or prompt. A method MCP
 * does not define is named `_OTHER` in the span name (its attribute keeps the value), so that a client cannot
 * mint span names.
 */
export function describeMcpMessage(span: Span, message: JsonRpcMessage): void {
  const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown; uri?: unknown } };
  span.setAttribute('jsonrpc.protocol.version', '2.0');
  if (typeof m.id === 'string' || typeof m.id === 'number') span.setAttribute('jsonrpc.request.id', String(m.id));
  if (typeof m.method !== 'string') return;
  span.setAttribute('mcp.method.name', cutAttribute(m.method));
  const known = MCP_METHODS.has(m.method);
  const name = m.params?.name;
  let target: string | undefined;
  if (m.method === 'tools/call' && typeof name === 'string') {
    target = cutAttribute(name);
    span.setAttributes({ 'gen_ai.tool.name': target, 'gen_ai.operation.name': 'execute_tool' });
  } else if (m.method === 'prompts/get' && typeof name === 'string') {
    target = cutAttribute(name);
    span.setAttribute('gen_ai.prompt.name', target);
  }
  const uri = m.params?.uri;
  if (typeof uri === 'string') span.setAttribute('mcp.resource.uri', cutAttribute(uri));
  span.updateName(known ? (target === undefined ? m.method : `${m.method} ${target}`) : '_OTHER');
}
