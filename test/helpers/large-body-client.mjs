// A client in a process of its own that POSTs a large body, as an MCP client would, with Node's `fetch` (undici,
// which the official TypeScript SDK client uses) or `node:http`, and prints one JSON line per attempt: the status,
// the Connection header and the body it read, or the error it got instead. In a process of its own so that it
// writes at full speed while the server answers, as a real client does (in the test's process both would share one
// event loop, which hides the reset).
//
// Usage: node large-body-client.mjs <url> <fetch|http> <attempts> <body bytes> [<headers as JSON>] [chunked]
import { request } from 'node:http';

const [url, kind, attempts, size, headersJson, framing] = process.argv.slice(2);
const extra = headersJson ? JSON.parse(headersJson) : {};
const chunked = framing === 'chunked';
const filler = 'x'.repeat(Number(size));
const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'notes_add', arguments: { text: filler } } });
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra };

/** One request with fetch; a chunked body is a stream of 64 KiB pieces. */
async function withFetch() {
  try {
    const init = { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) };
    if (chunked) {
      const bytes = Buffer.from(body);
      let offset = 0;
      init.body = new ReadableStream({
        pull(controller) {
          if (offset >= bytes.length) return controller.close();
          controller.enqueue(bytes.subarray(offset, (offset += 65_536)));
        },
      });
      init.duplex = 'half';
    }
    const res = await fetch(url, init);
    return { status: res.status, connection: res.headers.get('connection'), text: await res.text() };
  } catch (error) {
    return { error: `${error.message}: ${error.cause?.code ?? error.cause?.message ?? ''}` };
  }
}

/** One request with node:http; any error on the request, even after the answer was read, is reported. */
function withHttp() {
  return new Promise((resolve) => {
    let outcome;
    const errors = [];
    const req = request(url, { method: 'POST', headers: chunked ? headers : { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        outcome = { status: res.statusCode, connection: res.headers.connection ?? null, text: Buffer.concat(chunks).toString('utf8') };
      });
    });
    req.on('error', (error) => errors.push(`${error.code ?? error.message}`));
    // Settled once the connection is gone: an error after the answer (the reset of a write) counts as well.
    req.on('close', () => setTimeout(() => resolve(errors.length > 0 ? { ...outcome, error: errors.join(', ') } : outcome), 50));
    req.end(body);
  });
}

for (let i = 0; i < Number(attempts); i++) {
  const outcome = kind === 'fetch' ? await withFetch() : await withHttp();
  process.stdout.write(`${JSON.stringify(outcome ?? { error: 'no answer' })}\n`);
}
