// Proves the README and the manual hold together: every relative link in README.md, docs/*.md
// and bench/README.md lands on a file of the tree and, where it names a heading, on a heading
// of that file (as GitHub makes its anchors).

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROJECT_ROOT } from '../support/process.js';

/** The pages of the front door and the manual, relative to the project root. */
function pages(): string[] {
  const docs = readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', 'bench/README.md', ...docs];
}

/** The page without its fenced code blocks, whose brackets are not links. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page offers; a repeated heading gets -1, -2, ... as on GitHub. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchorOf(heading as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The links of a page that do not land, as one readable line each. */
function brokenLinks(page: string, text: string, root: string): string[] {
  const broken: string[] = [];
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const link = target as string;
    if (/^[a-z]+:/.test(link)) continue;
    const [file = '', anchor] = link.split('#');
    if (file === '') {
      if (anchor !== undefined && !anchorsOf(text).has(anchor)) broken.push(`${page}: ${link}: no such heading in ${page}`);
      continue;
    }
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
    const full = path.join(root, resolved);
    if (!existsSync(full)) {
      broken.push(`${page}: ${link}: no such file`);
      continue;
    }
    if (anchor !== undefined && !anchorsOf(readFileSync(full, 'utf8')).has(anchor))
      broken.push(`${page}: ${link}: no such heading in ${resolved}`);
  }
  return broken;
}

test('every relative link of the README and the manual lands on a file and, where named, a heading', () => {
  const broken = pages().flatMap((page) => brokenLinks(page, readFileSync(path.join(PROJECT_ROOT, page), 'utf8'), PROJECT_ROOT));
  assert.equal(broken, []);
});

test('anchors are made as GitHub makes them, and a link that misses is named', () => {
  assert.is(anchorOf('Fund conservation and the halt (MON-003)'), 'fund-conservation-and-the-halt-mon-003');
  assert.is(anchorOf('`GET /openapi.json`, `GET /docs`'), 'get-openapijson-get-docs');
  assert.is(anchorOf('The operator console (`/console`)'), 'the-operator-console-console');
  const page = '# Title\n## Twice\n## Twice\n[a](#twice-1) [b](#nowhere) [c](api.md#authentication) [d](no-such.md)';
  assert.equal(brokenLinks('docs/page.md', page, PROJECT_ROOT), [
    'docs/page.md: #nowhere: no such heading in docs/page.md',
    'docs/page.md: no-such.md: no such file',
  ]);
});

test.run();
