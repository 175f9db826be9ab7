// An introspection endpoint that answers 429, on real HTTP: the client still gets the guard's 503 with Retry-After
// (the endpoint's own, bounded), and the operator one warning a minute naming the setting to change, by the name it
// was given (an option, or the environment variable).
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../../src/core/guard/create-guard.js';
import { ENV_OPTION_VARIABLES } from '../../../src/core/guard/load-options-from-env.js';
import type { GuardOptions } from '../../../src/core/guard/guard-options.js';
import { INTROSPECTION_RATE_LIMITED_MESSAGE } from '../../../src/core/token/introspection-rate-limit-log.js';
import { httpHandler } from '../../../src/http/http-handler.js';
import { createRequestPipeline } from '../../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';
import { postMcp } from '../../helpers/http-client.js';
import { closeServer, servePipeline } from '../../helpers/loopback-server.js';

const RESOURCE = 'https://mcp.example.com/mcp';
const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo' } };

let issuer: TestIssuer;

before(async () => {
  issuer = await startTestIssuer();
});
after(async () => {
  await issuer?.close();
});

/** A guard introspecting at the test issuer, its warnings kept; stopped after `use`. */
async function withGuard(names: Record<string, string> | undefined, use: (url: string, warnings: string[]) => Promise<void>, extra: Partial<GuardOptions> = {}): Promise<void> {
  const warnings: string[] = [];
  const options: GuardOptions = {
    issuer: issuer.issuer,
    resource: RESOURCE,
    introspection: { clientId: 'rs-client', clientSecret: 'rs-secret', cacheTtlSeconds: 30 },
    logger: { info: () => {}, warn: (line) => void warnings.push(line) },
    ...extra,
  };
  const guard = createGuard(options, names);
  const pipeline = createRequestPipeline(guard, httpHandler((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":3,"result":{}}')));
  const { server, url }: { server: Server; url: string } = await servePipeline(pipeline);
  try {
    await use(url, warnings);
  } finally {
    closeServer(server);
    await pipeline.close();
  }
}

describe('an introspection endpoint that answers 429', () => {
  after(() => issuer.setIntrospectionFailure(undefined));

  test("503 with the endpoint's Retry-After, and one warning naming the option to change", async () => {
    issuer.setIntrospectionFailure({ status: 429, headers: { 'content-type': 'application/json', 'retry-after': '30' }, body: '{"error":"slow_down"}' });
    await withGuard(undefined, async (url, warnings) => {
      const first = await postMcp(url, call, 'opaque-token-1');
      assert.equal(first.status, 503);
      assert.equal(first.headers['retry-after'], '30');
      assert.equal(first.json.id, 3);
      assert.match(first.json.error.message, /rate-limiting/);
      // A second refusal within the minute: the same answer, no second line.
      const second = await postMcp(url, call, 'opaque-token-2');
      assert.equal(second.status, 503);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      const warning = JSON.parse(warnings[0]!) as Record<string, unknown>;
      assert.equal(warning.event, 'warning');
      assert.equal(warning.message, INTROSPECTION_RATE_LIMITED_MESSAGE);
      assert.equal(warning.setting, 'options.introspection.cacheTtlSeconds');
      assert.equal(warning.retryAfterSeconds, 30);
      assert.match(String(warning.fix), /raise options\.introspection\.cacheTtlSeconds \(now 30 s\)/);
      assert.match(String(warning.fix), /options\.introspection\.refusalsPerAddress/);
      assert.ok(!warnings[0]!.includes('opaque-token') && !warnings[0]!.includes('rs-secret'), 'no token, no secret');
    });
  });

  test('configured from the environment, the warning names the variables; a 429 with no usable Retry-After gets 5 s', async () => {
    issuer.setIntrospectionFailure({ status: 429, headers: { 'content-type': 'text/plain', 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }, body: 'Too Many Requests' });
    await withGuard(ENV_OPTION_VARIABLES, async (url, warnings) => {
      const answer = await postMcp(url, call, 'opaque-token-3');
      assert.equal(answer.status, 503);
      assert.equal(answer.headers['retry-after'], '5');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      const warning = JSON.parse(warnings[0]!) as Record<string, unknown>;
      assert.equal(warning.setting, 'MCP_AUTH_INTROSPECTION_CACHE_TTL');
      assert.match(String(warning.fix), /MCP_AUTH_INTROSPECTION_RATE_LIMIT/);
      assert.match(String(warning.fix), /MCP_AUTH_INTROSPECTION_CLIENT_ID/);
    });
  });

  test('a Retry-After past five minutes is cut to 300 s', async () => {
    issuer.setIntrospectionFailure({ status: 429, headers: { 'retry-after': '86400' } });
    await withGuard(undefined, async (url) => {
      const answer = await postMcp(url, call, 'opaque-token-4');
      assert.equal(answer.status, 503);
      assert.equal(answer.headers['retry-after'], '300');
    });
  });

  test('any other failure (a 500) keeps the plain 503 of 5 s, with no rate-limit warning', async () => {
    issuer.setIntrospectionFailure({ status: 500, headers: { 'content-type': 'application/json' }, body: '{"error":"server_error"}' });
    await withGuard(undefined, async (url, warnings) => {
      const answer = await postMcp(url, call, 'opaque-token-5');
      assert.equal(answer.status, 503);
      assert.equal(answer.headers['retry-after'], '5');
      assert.equal(answer.json.error.message, 'token introspection is unavailable');
      assert.deepEqual(warnings, []);
    });
  });
});
