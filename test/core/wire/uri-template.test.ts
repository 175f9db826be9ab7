import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileUriLookup, compileUriTemplate, isUriTemplate, resolveResourceTemplate, resolveResourceUri } from '../../../src/core/wire/uri-template.js';

test('{var} matches one path segment, never a "/"', () => {
  const t = compileUriTemplate('notes://{user}/{id}');
  assert.equal(t.matches('notes://alice/42'), true);
  assert.equal(t.matches('notes://alice/42/extra'), false);
  assert.equal(t.matches('other://alice/42'), false);
});

test('{+var} and {#var} match across "/"', () => {
  assert.equal(compileUriTemplate('file:///{+path}').matches('file:///etc/app/config.json'), true);
  const fragment = compileUriTemplate('doc://{id}{#section}');
  assert.equal(fragment.matches('doc://42#intro/part/2'), true);
  assert.equal(fragment.matches('doc://42'), true);
});

test('level-3 operators match their prefixed forms', () => {
  assert.equal(compileUriTemplate('api://items{/id}{?page,size}').matches('api://items/7?page=2&size=10'), true);
  assert.equal(compileUriTemplate('api://items{/id}{?page,size}').matches('api://items'), true);
});

test('the scheme is compared case-insensitively, the rest exactly', () => {
  const t = compileUriTemplate('notes://{user}/{id}');
  assert.equal(t.matches('NOTES://alice/1'), true);
  const lookup = compileUriLookup([['notes://alice/readme', 'exact']]);
  assert.equal(lookup.find('Notes://alice/readme'), 'exact');
  assert.equal(lookup.find('notes://Alice/readme'), undefined);
});

test('regular-expression characters in the literal part are matched literally', () => {
  const t = compileUriTemplate('db://x.y/{id}');
  assert.equal(t.matches('db://x.y/1'), true);
  assert.equal(t.matches('db://xzy/1'), false);
});

test('malformed templates are refused', () => {
  for (const bad of ['notes://{user', 'notes://user}', 'notes://{}', 'notes://{=x}', 'notes://{a b}']) {
    assert.throws(() => compileUriTemplate(bad), SyntaxError, bad);
  }
  assert.equal(isUriTemplate('notes://{id}'), true);
  assert.equal(isUriTemplate('notes://readme'), false);
});

test('exact keys beat templates, the longest literal prefix wins, then "*"', () => {
  const lookup = compileUriLookup<string>([
    ['*', 'default'],
    ['notes://{user}/{id}', 'any-note'],
    ['notes://admin/{id}', 'admin-note'],
    ['notes://admin/secret', 'exact'],
    ['file:///{+path}', 'file'],
  ]);
  assert.equal(lookup.find('notes://admin/secret'), 'exact');
  assert.equal(lookup.find('notes://admin/7'), 'admin-note');
  assert.equal(lookup.find('notes://bob/7'), 'any-note');
  assert.equal(lookup.find('file:///a/b/c'), 'file');
  assert.equal(lookup.find('mem://x'), 'default');
});

test('a template string is looked up exactly first, then like a URI', () => {
  const lookup = compileUriLookup<string>([
    ['notes://{user}/{id}', 'notes'],
    ['file:///{+path}', 'file'],
  ]);
  assert.equal(lookup.find('notes://{user}/{id}'), 'notes');
  assert.equal(lookup.find('file:///{path}'), 'file');
  assert.equal(lookup.find('mem://{x}'), undefined);
});

test('resolveResourceUri: WHATWG URL resolution, then percent-escapes normalized (RFC 3986 §6.2.2)', () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ['DOCS://private/plan', 'docs://private/plan'],
    ['docs://private/x/../plan', 'docs://private/plan'],
    ['docs://private/%2e%2E/plan', 'docs://private/plan'],
    ['https://EXAMPLE.com:443/doc', 'https://example.com/doc'],
    ['docs://private/%70lan', 'docs://private/plan'],
    ['docs://%70rivate/plan', 'docs://private/plan'],
    ['docs://private/%7e%5F%2D%2E', 'docs://private/~_-.'],
    ['docs://private/caf%c3%a9', 'docs://private/caf%C3%A9'],
    ['docs://private/a%2fb', 'docs://private/a%2Fb'],
    ['docs://private/%252e', 'docs://private/%252e'],
    ['notes://Alice/1', 'notes://Alice/1'],
    ['not a uri', undefined],
  ];
  for (const [uri, resolved] of cases) assert.equal(resolveResourceUri(uri), resolved, uri);
});

test('resolveResourceUri is idempotent: a resolved URI is its own resolved form', () => {
  const samples = ['DOCS://a/./b/%2e%2e/%63?x=%7a#%46', 'https://Ex%41mple.com:443/%7E/../a b', 'file:///C:/x/%2E%2e/y', 'urn:ISBN:%30', 'notes://x/.%2E/%2E./q'];
  for (const uri of samples) {
    const once = resolveResourceUri(uri);
    assert.ok(once !== undefined, uri);
    assert.equal(resolveResourceUri(once), once, uri);
  }
});

test('a rule keyed by one spelling applies to every spelling of the URI, percent-encoded ones included', () => {
  const lookup = compileUriLookup<string>([
    ['docs://private/plan', 'plan'],
    ['notes://x/café', 'cafe'],
    ['docs://private/{id}', 'private'],
    ['*', 'default'],
  ]);
  for (const uri of ['docs://private/plan', 'DOCS://private/plan', 'docs://private/%70lan', 'docs://private/pl%61n', 'docs://private/x/../plan']) {
    assert.equal(lookup.find(uri), 'plan', uri);
  }
  for (const uri of ['notes://x/café', 'notes://x/caf%C3%A9', 'notes://x/caf%c3%a9']) assert.equal(lookup.find(uri), 'cafe', uri);
  assert.equal(lookup.find('docs://private/other'), 'private');
});

test('resolveResourceTemplate resolves literal parts and keeps expressions', () => {
  assert.equal(resolveResourceTemplate('DOCS://x/./{id}'), 'docs://x/{id}');
  assert.equal(resolveResourceTemplate('file:///{+path}'), 'file:///{+path}');
  assert.equal(resolveResourceTemplate('notes://x/search{?q}'), 'notes://x/search{?q}');
  assert.equal(resolveResourceTemplate('notes://x/{a}/../{b}'), undefined, 'a dot segment would drop an expression');
  assert.equal(resolveResourceTemplate('{+base}/docs'), undefined, 'not an absolute URI template');
});
