// A response forwarded to one server of a set keeps fast properties: the set's patch that shows the client's session
// id must be gone before the answer filter undoes its own, newest first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from '../../helpers/child-process.js';

describe('forwarding to a server of a set', () => {
  it("leaves each response it answered with fast properties (V8's own answer)", () => {
    const src = (path: string): string => JSON.stringify(new URL(`../../../${path}`, import.meta.url).href);
    const script = `
      import { once } from 'node:events';
      import { createServer } from 'node:http';
      import { startAuthorizationServer } from ${src('examples/dev/authorization-server.ts')};
      import { loadGatewayConfig } from ${src('src/gateway/config/gateway-config.ts')};
      import { startGateway } from ${src('src/gateway/server/start-gateway.ts')};
      const body = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}';
      const upstream = createServer((req, res) => {
        req.resume();
        req.once('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'mcp-session-id': 'the-server-own' }).end(body));
      }).listen(0, '127.0.0.1');
      await once(upstream, 'listening');
      const as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
      const url = 'http://127.0.0.1:' + upstream.address().port + '/mcp';
      const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, PORT: '0', HOST: '127.0.0.1' }, { upstreamRequired: false });
      const servers = ['one', 'two'].map((name) => ({ name, transport: 'http', proxy: { upstream: url }, required: false }));
      const gateway = await startGateway({ ...config, servers }, { log: () => {}, warn: () => {} });
      as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
      const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' });
      const fast = [];
      gateway.server.prependListener('request', (req, res) => res.once('finish', () => fast.push(eval('%HasFastProperties(res)'))));
      const answers = [];
      for (let id = 1; id <= 3; id++) {
        const answer = await fetch(gateway.resource, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer ' + token },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'one__echo', arguments: {} } }),
        });
        await answer.text();
        answers.push([answer.status, answer.headers.get('mcp-session-id')]);
      }
      await gateway.shutdown();
      upstream.close();
      await as.close();
      console.log(JSON.stringify([answers, fast]));
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8', timeout: 60_000 });
    // The server's own session id never reaches the client, which sent none.
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), [
      [
        [200, null],
        [200, null],
        [200, null],
      ],
      [true, true, true],
    ]);
  });
});
