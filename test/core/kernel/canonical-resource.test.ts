import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalizeResourceUri, isLoopbackHost, protectedResourceMetadataUrls } from '../../../src/core/kernel/canonical-resource.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';

function isConfigError(setting: string, pattern: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ConfigurationError, String(e));
    assert.equal(e.setting, setting);
    assert.ok(e.message.startsWith(`${setting}: `), e.message);
    assert.match(e.message, pattern);
    return true;
  };
}

test('uppercase scheme and host are lowercased; the path keeps its case', () => {
  assert.equal(canonicalizeResourceUri('HTTPS://MCP.Example.COM/MCP'), 'https://mcp.example.com/MCP');
});

test('trailing slashes are removed, however many', () => {
  assert.equal(canonicalizeResourceUri('https://mcp.example.com/mcp/'), 'https://mcp.example.com/mcp');
  assert.equal(canonicalizeResourceUri('https://mcp.example.com/mcp///'), 'https://mcp.example.com/mcp');
  assert.equal(canonicalizeResourceUri('https://mcp.example.com/a/b/'), 'https://mcp.example.com/a/b');
});

test('a path-less resource has no trailing slash', () => {
  assert.equal(canonicalizeResourceUri('https://mcp.example.com'), 'https://mcp.example.com');
  assert.equal(canonicalizeResourceUri('https://mcp.example.com/'), 'https://mcp.example.com');
  assert.equal(canonicalizeResourceUri('https://mcp.example.com//'), 'https://mcp.example.com');
});

test('the default port is dropped, any other port kept', () => {
  assert.equal(canonicalizeResourceUri('https://mcp.example.com:443/mcp'), 'https://mcp.example.com/mcp');
  assert.equal(canonicalizeResourceUri('http://localhost:80/mcp'), 'http://localhost/mcp');
  assert.equal(canonicalizeResourceUri('https://mcp.example.com:8443/mcp'), 'https://mcp.example.com:8443/mcp');
  assert.equal(canonicalizeResourceUri('http://127.0.0.1:3000/mcp'), 'http://127.0.0.1:3000/mcp');
});

test('an already canonical URI is returned unchanged', () => {
  for (const uri of ['https://mcp.example.com/mcp', 'http://[::1]:3000/mcp', 'https://mcp.example.com/a%20b']) {
    assert.equal(canonicalizeResourceUri(uri), uri);
    assert.equal(canonicalizeResourceUri(canonicalizeResourceUri(uri)), uri);
  }
});

test('a fragment is refused, even an empty one', () => {
  assert.throws(() => canonicalizeResourceUri('https://mcp.example.com/mcp#top'), isConfigError('resource', /must not contain a fragment \(RFC 8707 §2\)/));
  assert.throws(() => canonicalizeResourceUri('https://mcp.example.com/mcp#'), isConfigError('resource', /must not contain a fragment/));
});

test('a query string is refused', () => {
  assert.throws(
    () => canonicalizeResourceUri('https://mcp.example.com/mcp?tenant=a', 'MCP_AUTH_RESOURCE'),
    isConfigError('MCP_AUTH_RESOURCE', /must not contain a query string \(RFC 8707 §2\)/),
  );
});

test('credentials are refused', () => {
  assert.throws(() => canonicalizeResourceUri('https://user:pw@mcp.example.com/mcp', 'options.resource'), isConfigError('options.resource', /must not contain credentials/));
  assert.throws(() => canonicalizeResourceUri('https://user@mcp.example.com/mcp'), isConfigError('resource', /must not contain credentials/));
});

test('http is allowed on loopback hosts only', () => {
  assert.equal(canonicalizeResourceUri('http://localhost:3000/mcp'), 'http://localhost:3000/mcp');
  assert.equal(canonicalizeResourceUri('http://127.0.0.1/mcp'), 'http://127.0.0.1/mcp');
  assert.equal(canonicalizeResourceUri('http://[::1]/mcp'), 'http://[::1]/mcp');
  assert.throws(
    () => canonicalizeResourceUri('http://mcp.example.com/mcp', 'MCP_AUTH_RESOURCE'),
    isConfigError('MCP_AUTH_RESOURCE', /http is only allowed on loopback hosts .*use https for mcp\.example\.com$/),
  );
  assert.throws(() => canonicalizeResourceUri('http://10.0.0.1:8080/mcp'), isConfigError('resource', /use https for 10\.0\.0\.1:8080$/));
});

test('other schemes and relative URLs are refused with a hint', () => {
  assert.throws(() => canonicalizeResourceUri('ftp://mcp.example.com/mcp'), isConfigError('resource', /must be an https URL \(got ftp:\)/));
  assert.throws(
    () => canonicalizeResourceUri('/mcp', 'MCP_AUTH_RESOURCE'),
    isConfigError('MCP_AUTH_RESOURCE', /"\/mcp" is not an absolute URL; set it to the public URL of your MCP endpoint/),
  );
  assert.throws(() => canonicalizeResourceUri('mcp.example.com/mcp'), isConfigError('resource', /is not an absolute URL/));
});

test('isLoopbackHost: 127.0.0.0/8, ::1 and localhost', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'api.localhost']) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (const host of ['128.0.0.1', '10.0.0.1', '0.0.0.0', '::2', 'localhost.example.com', 'notlocalhost', '127.0.0.1.example.com', '']) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

test('metadata URLs: path-suffixed first, then root', () => {
  assert.deepEqual(protectedResourceMetadataUrls('https://mcp.example.com/mcp'), {
    url: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
    paths: ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'],
  });
  assert.deepEqual(protectedResourceMetadataUrls('http://127.0.0.1:3000/a/b'), {
    url: 'http://127.0.0.1:3000/.well-known/oauth-protected-resource/a/b',
    paths: ['/.well-known/oauth-protected-resource/a/b', '/.well-known/oauth-protected-resource'],
  });
});

test('metadata URLs: a path-less resource has only the root one', () => {
  assert.deepEqual(protectedResourceMetadataUrls('https://mcp.example.com'), {
    url: 'https://mcp.example.com/.well-known/oauth-protected-resource',
    paths: ['/.well-known/oauth-protected-resource'],
  });
});

test('metadata URL is derived from the canonical resource, never from the raw input', () => {
  const canonical = canonicalizeResourceUri('HTTPS://MCP.Example.com:443/mcp/');
  assert.equal(protectedResourceMetadataUrls(canonical).url, 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp');
});
