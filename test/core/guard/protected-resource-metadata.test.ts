import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildProtectedResourceMetadata } from '../../../src/core/guard/protected-resource-metadata.js';

describe('buildProtectedResourceMetadata (RFC 9728 §2)', () => {
  test('the minimal document: resource, authorization servers, scopes, header-only bearer method', () => {
    const doc = buildProtectedResourceMetadata({
      resource: 'https://mcp.example.com/mcp',
      authorizationServers: ['https://auth.example.com'],
      scopesSupported: ['notes:read', 'notes:write'],
    });
    assert.deepEqual(doc, {
      resource: 'https://mcp.example.com/mcp',
      authorization_servers: ['https://auth.example.com'],
      scopes_supported: ['notes:read', 'notes:write'],
      bearer_methods_supported: ['header'],
    });
    assert.equal(Object.hasOwn(doc, 'resource_name'), false);
    assert.equal(Object.hasOwn(doc, 'resource_documentation'), false);
  });

  test('serializes with its fields in a fixed order', () => {
    const doc = buildProtectedResourceMetadata({
      resource: 'https://mcp.example.com',
      authorizationServers: ['https://a.example', 'https://b.example'],
      scopesSupported: [],
      resourceName: 'Notes',
      resourceDocumentation: 'https://docs.example.com/notes',
    });
    assert.equal(
      JSON.stringify(doc),
      '{"resource":"https://mcp.example.com","authorization_servers":["https://a.example","https://b.example"],' +
        '"scopes_supported":[],"bearer_methods_supported":["header"],"resource_name":"Notes",' +
        '"resource_documentation":"https://docs.example.com/notes"}',
    );
  });

  test('offline_access is never advertised, wherever it appears', () => {
    const doc = buildProtectedResourceMetadata({
      resource: 'https://mcp.example.com/mcp',
      authorizationServers: ['https://auth.example.com'],
      scopesSupported: ['offline_access', 'notes:read', 'offline_access', 'notes:write'],
    });
    assert.deepEqual(doc.scopes_supported, ['notes:read', 'notes:write']);
  });

  test('empty name and documentation are left out', () => {
    const doc = buildProtectedResourceMetadata({
      resource: 'https://mcp.example.com/mcp',
      authorizationServers: ['https://auth.example.com'],
      scopesSupported: [],
      resourceName: '',
      resourceDocumentation: '',
    });
    assert.equal(Object.hasOwn(doc, 'resource_name'), false);
    assert.equal(Object.hasOwn(doc, 'resource_documentation'), false);
  });

  test('copies the input lists: the document does not change with the caller\'s arrays', () => {
    const servers = ['https://auth.example.com'];
    const scopes = ['notes:read'];
    const doc = buildProtectedResourceMetadata({ resource: 'https://mcp.example.com/mcp', authorizationServers: servers, scopesSupported: scopes });
    servers.push('https://evil.example');
    scopes.push('notes:admin');
    assert.deepEqual(doc.authorization_servers, ['https://auth.example.com']);
    assert.deepEqual(doc.scopes_supported, ['notes:read']);
  });
});
