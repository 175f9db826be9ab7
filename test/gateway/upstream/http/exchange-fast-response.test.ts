// A gateway response keeps fast properties through the answer filter and the exchange: undoing the filter's patch
// deletes properties newest first, so nothing may be added to the response after the patch.
import assert from 'node:assert/strict';
import { execFileSync } from '../../../helpers/child-process.js';
import { describe, it } from 'node:test';

describe('HTTP upstream exchange', () => {
  it("leaves each response it answered with fast properties (V8's own answer)", () => {
    const src = (path: string): string => JSON.stringify(new URL(`../../../../${path}`, import.meta.url).href);
    const script = `
      import { once } from 'node:events';
      import { createServer } from 'node:http';
      import { startAuthorizationServer } from ${src('examples/dev/authorization-server.ts')};
      import { loadGatewayConfig } from ${src('src/gateway/config/gateway-config.ts')};
      import { startGateway } from ${src('src/gateway/server/start-gateway.ts')};
      const body = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}';
      const upstream = createServer((req, res) => {
        req.resume();
        req.once('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body));
      }).listen(0, '127.0.0.1');
      await once(upstream, 'listening');
      const as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
      const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: 'http://127.0.0.1:' + upstream.address().port + '/mcp', MCP_AUTH_ISSUER: as.issuer, PORT: '0', HOST: '127.0.0.1' });
      const gateway = await startGateway(config, { log: () => {}, warn: () => {} });
      as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
      const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' });
      const fast = [];
      gateway.server.prependListener('request', (req, res) => res.once('finish', () => fast.push(eval('%HasFastProperties(res)'))));
      const statuses = [];
      for (let id = 1; id <= 3; id++) {
        const answer = await fetch(gateway.resource, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer ' + token },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: {} } }),
        });
        await answer.text();
        statuses.push(answer.status);
      }
      await gateway.shutdown();
      upstream.close();
      await as.close();
      console.log(JSON.stringify([statuses, fast]));
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8', timeout: 60_000 });
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), [
      [200, 200, 200],
      [true, true, true],
    ]);
  });
});
