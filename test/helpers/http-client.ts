import { request } from 'node:http';

/** A raw HTTP answer, with the body parsed as JSON when it is JSON. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/**
 * Sends one request with node:http so tests control every header exactly (duplicated headers
 * included, which fetch would merge).
 */
export function send(
  url: string,
  init: { method?: string; headers?: Record<string, string | string[]>; body?: string | Buffer; localAddress?: string } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'POST', timeout: 15_000, ...(init.localAddress ? { localAddress: init.localAddress } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    for (const [k, v] of Object.entries(init.headers ?? {})) req.setHeader(k, v);
    if (init.body !== undefined && !req.hasHeader('content-length')) req.setHeader('content-length', Buffer.byteLength(init.body));
    req.end(init.body);
  });
}

/** POSTs a JSON-RPC message as an MCP client would. */
export function postMcp(url: string, message: unknown, token?: string, headers: Record<string, string | string[]> = {}, localAddress?: string): Promise<HttpAnswer> {
  return send(url, {
    ...(localAddress ? { localAddress } : {}),
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof message === 'string' ? message : JSON.stringify(message),
  });
}

/** The JSON-RPC messages of an answer: the JSON body, or the data of each SSE event. */
export function messages(answer: HttpAnswer): any[] {
  const type = String(answer.headers['content-type'] ?? '');
  if (type.startsWith('application/json')) return [answer.json];
  if (!type.startsWith('text/event-stream')) return [];
  const out: any[] = [];
  for (const block of answer.text.replace(/\r\n?/g, '\n').split('\n\n')) {
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart());
    if (data.length && data.join('') !== '') out.push(JSON.parse(data.join('\n')));
  }
  return out;
}
