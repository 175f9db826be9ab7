// Preloaded (`node --import`) into @modelcontextprotocol/server-everything for the interop tests.
// - The server takes only PORT and listens on every interface: give `listen` the host 127.0.0.1 when the
//   caller named none, so the test never exposes it.
// - Print the port it got (PORT=0 picks a free one) as `EVERYTHING_PORT=<n>` on stdout.
// - Append what each HTTP request carried (method, URL, headers) as a JSON line to the file named by
//   EVERYTHING_RECORD_FILE, so the test can check what the gateway forwards upstream.
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const recordFile = process.env.EVERYTHING_RECORD_FILE;
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value));
}

net.Server.prototype.listen = function listen(...args) {
  const [first, second] = args;
  if (args.length === 0 || typeof first === 'function') {
    args.unshift(0, LOOPBACK);
  } else if (isPort(first) && typeof second !== 'string') {
    args.splice(1, 0, LOOPBACK);
  } else if (typeof first === 'object' && first !== null && first.path === undefined && first.host === undefined) {
    args[0] = { ...first, host: LOOPBACK };
  }
  if (this instanceof http.Server) {
    if (recordFile) {
      this.prependListener('request', (req) => {
        appendFileSync(recordFile, `${JSON.stringify({ method: req.method, url: req.url, headers: req.headers })}\n`);
      });
    }
    this.once('listening', () => {
      const address = this.address();
      if (address && typeof address === 'object') process.stdout.write(`EVERYTHING_PORT=${address.port} HOST=${address.address}\n`);
    });
  }
  return originalListen.apply(this, args);
};
