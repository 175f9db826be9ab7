// Loaded into every test process of `npm test` (test/run.ts passes it with `--import`).
//
// When `assert.ok(value)` fails without a message, Node 20 makes one by reading the calling file again and parsing
// it with acorn from every token up to the call. Under tsx the line and column it is given are those of the
// transformed code, not of the TypeScript file, so in a long test file the search parses the rest of the file from
// each of thousands of tokens: over 100 seconds of synchronous work, during which no timer fires, so the test's own
// time limit cannot end it and the file is cancelled with no word of which assertion failed. A failing `assert.ok`
// without a message gets one here instead: the falsy value and the line that asserted it.
import assert from 'node:assert';
import { inspect } from 'node:util';

type Ok = (value: unknown, message?: string | Error) => asserts value;

function withCheapMessage(ok: Ok): Ok {
  return function okWithMessage(value: unknown, message?: string | Error): asserts value {
    // No argument at all keeps Node's own message ("No value argument passed"), which reads no source.
    if (message === undefined && !value && arguments.length > 0) {
      // Line 0 of the stack is the message, line 1 this function, line 2 the assertion in the test (source-mapped by tsx).
      const site = new Error().stack?.split('\n')[2]?.trim() ?? 'an unknown line';
      ok(value, `expected a truthy value, got ${inspect(value)} (${site})`);
    }
    return arguments.length === 0 ? (ok as () => void)() : ok(value, message);
  };
}

// `node:assert/strict`'s default export is `assert.strict`: its own `ok`, besides the legacy one.
assert.ok = withCheapMessage(assert.ok);
assert.strict.ok = withCheapMessage(assert.strict.ok);
