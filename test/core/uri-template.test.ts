import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileUriLookup, compileUriTemplate, isUriTemplate } from '../../src/core/uri-template.js';

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
