// "Wait for this, at most N ms" is written once, in src/core/kernel/bounded-wait.ts (`waitBounded`): it clears its
// timer, and keeps a late rejection of the work from being reported as unhandled. A Promise.race of some work against
// a timer elsewhere is a second copy of that rule, which drifts from it; races of events (`listening` against
// `error`) are not waits of that kind and stay.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fromSrc, sourceFiles } from './source-files.js';

/** The arguments of every `Promise.race(` in `text`, up to its closing parenthesis. */
function races(text: string): string[] {
  const found: string[] = [];
  for (let at = text.indexOf('Promise.race('); at >= 0; at = text.indexOf('Promise.race(', at + 1)) {
    let depth = 0;
    let end = at + 'Promise.race'.length;
    for (; end < text.length; end++) {
      if (text[end] === '(') depth++;
      else if (text[end] === ')' && --depth === 0) break;
    }
    found.push(text.slice(at, end + 1));
  }
  return found;
}

test('no Promise.race of work against a timer outside bounded-wait.ts: waits at most N ms use waitBounded', () => {
  const offenders = sourceFiles()
    .filter((file) => fromSrc(file) !== 'core/kernel/bounded-wait.ts')
    .flatMap((file) => races(readFileSync(file, 'utf8')).filter((race) => /setTimeout|delay\(|sleep\(|timed?out|timer/i.test(race)).map((race) => `${fromSrc(file)}: ${race.replace(/\s+/g, ' ').slice(0, 80)}`));
  assert.deepEqual(offenders, [], 'use waitBounded from src/core/kernel/bounded-wait.ts');
});

test('the check finds a race against a timer, and lets an event race be', () => {
  assert.equal(races('await Promise.race([work(), new Promise((r) => setTimeout(r, 5))]);').length, 1);
  assert.match(races('x; Promise.race([sample(store), timedOut]); y')[0]!, /timedOut/);
  assert.doesNotMatch(races("Promise.race([once(server, 'listening'), once(server, 'error')])")[0]!, /setTimeout|delay\(|sleep\(|timed?out|timer/i);
});
