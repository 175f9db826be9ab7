import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResourceRoutes, type ResourceClaimConflict } from '../../../src/gateway/multiplex/resource-routes.js';
import { routeMessage } from '../../../src/gateway/multiplex/route-message.js';
import type { SetMember } from '../../../src/gateway/multiplex/set-member.js';
import type { Upstream } from '../../../src/gateway/upstream/upstream.js';

describe('resource routes', () => {
  it('route a URI to the server that listed it, else to the server whose template matches', () => {
    const routes = new ResourceRoutes(['notes', 'files']);
    routes.learn('notes', ['notes://a'], 'uris');
    routes.learn('files', ['file:///{path}'], 'templates');
    assert.equal(routes.serverOf('notes://a'), 'notes');
    assert.equal(routes.serverOf('file:///hosts'), 'files');
    assert.equal(routes.serverOf('other://x'), undefined);
  });

  it('give a URI two servers claim to the first in the file, and report it once', () => {
    const conflicts: ResourceClaimConflict[] = [];
    const routes = new ResourceRoutes(['one', 'two'], (c) => conflicts.push(c));
    routes.learn('two', ['shared://x'], 'uris');
    routes.learn('one', ['shared://x'], 'uris');
    assert.equal(routes.serverOf('shared://x'), 'one');
    routes.learn('two', ['shared://x', 'two://y'], 'uris');
    assert.equal(routes.serverOf('shared://x'), 'one');
    assert.deepEqual(conflicts, [{ uri: 'shared://x', kept: 'one', ignored: 'two' }]);
  });
});

describe('routing a message in a server set', () => {
  const member = (name: string, selects = (_: string) => true): SetMember => ({ name, upstream: {} as Upstream, selects, listTimeoutMs: 1000, callerBlind: false, profile: undefined });
  const members = new Map([['notes', member('notes', (t) => t !== 'secret')], ['x', member('x')]]);
  const routes = new ResourceRoutes(['notes', 'x']);
  routes.learn('x', ['x://{id}'], 'templates');

  it('routes tools, prompts and completions by prefix, with the server\'s own name in a copy', () => {
    const call = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: 'notes__add__two', arguments: {} } };
    const route = routeMessage(call, members, routes);
    assert.equal(route.to, 'member');
    assert.equal(route.to === 'member' && route.member.name, 'notes');
    assert.equal(route.to === 'member' && (route.message as typeof call).params.name, 'add__two');
    assert.equal(call.params.name, 'notes__add__two', 'the client\'s message is left as it is');
    const complete = routeMessage({ jsonrpc: '2.0', id: 2, method: 'completion/complete', params: { ref: { type: 'ref/prompt', name: 'x__p' }, argument: { name: 'a', value: '' } } }, members, routes);
    assert.equal(complete.to === 'member' && (complete.message as unknown as { params: { ref: { name: string } } }).params.ref.name, 'p');
    const read = routeMessage({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'x://7' } }, members, routes);
    assert.equal(read.to === 'member' && read.member.name, 'x');
  });

  it('refuses an unknown or unselected tool as unknown (-32602), never as forbidden', () => {
    for (const name of ['notes__secret', 'nobody__add', 'add', '__add', 'notes__']) {
      const route = routeMessage({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } }, members, routes);
      assert.equal(route.to, 'refused', name);
      assert.equal(route.to === 'refused' && route.code, -32602, name);
    }
    // A prompt is not subject to the tool selection.
    assert.equal(routeMessage({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'notes__secret' } }, members, routes).to, 'member');
    assert.equal(routeMessage({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'nowhere://1' } }, members, routes).to, 'unrouted_resource');
    assert.equal(routeMessage({ jsonrpc: '2.0', id: 1, method: 'unknown/method' }, members, routes).to, 'refused');
  });
});
