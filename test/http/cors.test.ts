// CORS headers as a browser sees them, over real HTTP: the metadata is open to any origin; the endpoint
// echoes an allowed origin and lets the browser send the MCP headers.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setEndpointCors, setMetadataCors } from '../../src/http/cors.js';
import { send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const MCP_REQUEST_HEADERS =
  'Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID';

let server: Server;
let base: string;

before(async () => {
  // /metadata?preflight=1 and /endpoint?preflight=1; the origin and the requested headers come from the request.
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const preflight = url.searchParams.get('preflight') === '1';
    if (url.pathname === '/metadata') setMetadataCors(res, preflight);
    else {
      const requested = req.headers['access-control-request-headers'];
      setEndpointCors(res, String(req.headers.origin), preflight, typeof requested === 'string' ? requested : undefined, url.searchParams.get('dpop') === '1');
    }
    res.writeHead(204).end();
  });
  base = await listenOnLoopback(server);
});
after(() => closeServer(server));

describe('setMetadataCors', () => {
  test('a plain request gets Access-Control-Allow-Origin * and nothing else', async () => {
    const res = await send(`${base}/metadata`, { method: 'GET', headers: { origin: 'https://app.example' } });
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.equal(res.headers['access-control-allow-methods'], undefined);
    assert.equal(res.headers['access-control-allow-headers'], undefined);
    assert.equal(res.headers['access-control-max-age'], undefined);
    assert.equal(res.headers['access-control-allow-credentials'], undefined);
  });

  test('a preflight may read with GET/HEAD and send MCP-Protocol-Version; cached a day', async () => {
    const res = await send(`${base}/metadata?preflight=1`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.equal(res.headers['access-control-allow-methods'], 'GET, HEAD, OPTIONS');
    assert.equal(res.headers['access-control-allow-headers'], 'MCP-Protocol-Version, Content-Type, Accept');
    assert.equal(res.headers['access-control-max-age'], '86400');
    assert.equal(res.headers['access-control-allow-credentials'], undefined);
  });
});

describe('setEndpointCors', () => {
  test('a plain request: the origin echoed (never *), Vary: Origin, the MCP response headers exposed', async () => {
    const res = await send(`${base}/endpoint`, { method: 'POST', headers: { origin: 'https://inspector.example' }, body: '' });
    assert.equal(res.headers['access-control-allow-origin'], 'https://inspector.example');
    assert.equal(res.headers.vary, 'Origin');
    assert.equal(res.headers['access-control-expose-headers'], 'WWW-Authenticate, Mcp-Session-Id, MCP-Protocol-Version');
    assert.equal(res.headers['access-control-allow-methods'], undefined);
    assert.equal(res.headers['access-control-allow-headers'], undefined);
    assert.equal(res.headers['access-control-max-age'], undefined);
  });

  test('a preflight allows the MCP methods and request headers, cached ten minutes', async () => {
    const res = await send(`${base}/endpoint?preflight=1`, {
      method: 'OPTIONS',
      headers: { origin: 'https://inspector.example', 'access-control-request-headers': 'authorization, content-type' },
    });
    assert.equal(res.headers['access-control-allow-origin'], 'https://inspector.example');
    assert.equal(res.headers['access-control-allow-methods'], 'POST, GET, DELETE, OPTIONS');
    assert.equal(res.headers['access-control-allow-headers'], MCP_REQUEST_HEADERS);
    assert.equal(res.headers['access-control-max-age'], '600');
  });

  test('requested Mcp-Param-* headers are allowed too; anything else requested is not', async () => {
    const res = await send(`${base}/endpoint?preflight=1`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://inspector.example',
        'access-control-request-headers': 'Mcp-Param-Region, x-evil, mcp-param-, mcp-param-a_b, MCP-PARAM-Tenant-Id ,cookie',
      },
    });
    assert.equal(res.headers['access-control-allow-headers'], `${MCP_REQUEST_HEADERS}, Mcp-Param-Region, MCP-PARAM-Tenant-Id`);
  });

  test('with DPoP taken, DPoP is allowed too (before any Mcp-Param-*); without, it is not, even when asked for', async () => {
    const headers = { origin: 'https://inspector.example', 'access-control-request-headers': 'authorization, dpop, mcp-param-region' };
    const taken = await send(`${base}/endpoint?preflight=1&dpop=1`, { method: 'OPTIONS', headers });
    assert.equal(taken.headers['access-control-allow-headers'], `${MCP_REQUEST_HEADERS}, DPoP, mcp-param-region`);
    const off = await send(`${base}/endpoint?preflight=1`, { method: 'OPTIONS', headers });
    assert.equal(off.headers['access-control-allow-headers'], `${MCP_REQUEST_HEADERS}, mcp-param-region`);
  });

  test('a preflight without requested headers gets the plain MCP list', async () => {
    const res = await send(`${base}/endpoint?preflight=1`, { method: 'OPTIONS', headers: { origin: 'http://localhost:6274' } });
    assert.equal(res.headers['access-control-allow-origin'], 'http://localhost:6274');
    assert.equal(res.headers['access-control-allow-headers'], MCP_REQUEST_HEADERS);
  });
});
