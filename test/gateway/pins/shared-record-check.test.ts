// The pins read untrusted JSON (pin files, upstream lists) through the one shared record check, so that what counts
// as an object is decided in one place: no file of theirs keeps a check of its own.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fromSrc, sourceFiles, SRC } from '../../package/source-files.js';

/** A type guard or helper that tells a record from other values, written again instead of imported. */
const OWN_RECORD_CHECK = /function\s+\w+\s*\(\s*\w+\s*:\s*unknown\s*\)\s*:\s*\w+\s+is\s+Record<string,\s*unknown>/;

describe('the pins and the shared record check', () => {
  it('no pins source file defines its own record check; those reading JSON objects import asRecord', () => {
    const files = sourceFiles(join(SRC, 'gateway', 'pins'));
    assert.ok(files.length > 0);
    const own = files.filter((file) => OWN_RECORD_CHECK.test(readFileSync(file, 'utf8'))).map(fromSrc);
    assert.deepEqual(own, []);
    for (const name of ['pin-document.ts', 'pin-diff.ts']) {
      assert.match(readFileSync(join(SRC, 'gateway', 'pins', name), 'utf8'), /from '\.\.\/\.\.\/core\/wire\/as-record\.js'/, name);
    }
  });
});
