// mcpOAuthGuard returns a real Express Router: routes added to it run, other paths fall through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { mcpOAuthGuard } from '../../src/index.js';

test('the returned router is a Router: its own routes run after the guard, unknown paths fall through', async () => {
  const app = express();
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const router = mcpOAuthGuard({ issuer: 'http://127.0.0.1:9', resource: `${origin}/mcp`, handler: () => undefined });
    router.get('/status', (_req, res) => {
      res.send('status ok');
    });
    app.use(router);
    app.use((_req, res) => {
      res.status(404).send('fell through');
    });
    assert.equal(typeof router.use, 'function');
    assert.equal(typeof router.get, 'function');
    const status = await fetch(`${origin}/status`);
    assert.equal(status.status, 200);
    assert.equal(await status.text(), 'status ok');
    const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(metadata.status, 200);
    assert.equal(((await metadata.json()) as { resource: string }).resource, `${origin}/mcp`);
    const other = await fetch(`${origin}/elsewhere`);
    assert.equal(other.status, 404);
    assert.equal(await other.text(), 'fell through');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
