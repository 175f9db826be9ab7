// Every relative link in the README and the pages under docs/ points at a file of the repository, and every
// `#anchor` at a heading that exists (GitHub's anchors), so a reader following the docs never meets a dead end.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))];

/** The text outside fenced code blocks and inline code, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower-cased text, punctuation dropped, each space a hyphen; repeats get -1, -2. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading = ''] of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative link targets (`[text](target)` and `[text]: target`), without `<…>` and titles. */
function linksOf(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...references].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

test('the README and docs/ pages are there to be checked', () => {
  assert.ok(PAGES.includes('README.md'));
  for (const page of ['wrapping', 'gateway', 'policy', 'request-lifecycle', 'identity-providers', 'dpop', 'performance', 'security', 'development']) {
    assert.ok(PAGES.includes(join('docs', `${page}.md`)), `docs/${page}.md`);
  }
});

test('every relative link points at an existing file, and every anchor at an existing heading', () => {
  const problems: string[] = [];
  for (const page of PAGES) {
    const markdown = readFileSync(join(ROOT, page), 'utf8');
    for (const link of linksOf(markdown)) {
      const hash = link.indexOf('#');
      const path = decodeURIComponent(hash === -1 ? link : link.slice(0, hash));
      const anchor = hash === -1 ? undefined : decodeURIComponent(link.slice(hash + 1));
      const target = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
      if (relative(ROOT, target).startsWith('..')) {
        problems.push(`${page}: ${link} leaves the repository`);
        continue;
      }
      if (!existsSync(target)) {
        problems.push(`${page}: ${link}: no such file ${relative(ROOT, target)}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(target).isDirectory() || !target.endsWith('.md')) {
        problems.push(`${page}: ${link}: an anchor into something that is not a Markdown page`);
      } else if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
        problems.push(`${page}: ${link}: ${relative(ROOT, target)} has no heading with the anchor #${anchor}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('the anchor rule follows GitHub: code, punctuation and repeats', () => {
  const anchors = anchorsOf('# Plain `node:http`, or any framework that hands you `(req, res)`\n## Options\n## Options\n```sh\n# not a heading\n```\n');
  assert.deepEqual([...anchors], ['plain-nodehttp-or-any-framework-that-hands-you-req-res', 'options', 'options-1']);
  assert.deepEqual(linksOf('[a](docs/x.md#y) `[b](not/a/link.md)` [c](https://example.com) [d](#z)\n```\n[e](in/code.md)\n```\n'), ['docs/x.md#y', '#z']);
});
