// Proves the comment check `make lint` runs (test/lint/comments.ts): it names, file:line, a path a comment names
// that does not exist (from the root, or from the file's folder after `./` and `../`; in `//`, `/* */` and SQL's `--`),
// and stays quiet on one that exists, on a `.js` name whose `.ts` source exists, and on what names no file of the tree
// (URLs, globs, build outputs, git-ignored folders, paths under a variable, words in strings, the versioned migrations,
// while the repeatable SQL files are read); and it refuses a
// tracker number in a comment, a string or a page of the manual. The tree itself passes it.
// Each case is a small file in a scratch tree.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree, type Problem } from '../lint/comments.js';
import { PROJECT_ROOT } from '../support/process.js';

/** A ticket citation, built so that this file does not cite one itself. */
const TICKET = ['issue', '12'].join(' ');

async function scratchTree(files: Record<string, string>): Promise<string> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-comment-lint-'));
  for (const [file, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await fs.writeFile(path.join(root, file), text);
  }
  return root;
}

function lines(problems: Problem[]): string[] {
  return problems.map((p) => `${p.file}:${p.line}: ${p.message}`).sort();
}

test('a comment naming a missing path fails with file:line and the path; present, relative and skipped ones pass', async () => {
  const root = await scratchTree({
    '.gitignore': 'node_modules/\nexamples/generated/\n',
    'docs/design.md': '# Design\n',
    'src/present.ts': 'export const p = 1;\n',
    'src/db/migrations/0001_init.sql': '-- names src/db/gone.ts, and is never read: an applied migration never changes\n',
    'src/db/migrations/repeatable/f.sql': '-- names src/db/gone-too.ts: a repeatable file changes by diff, and is read\n',
    'src/names.ts': [
      '// Present: src/present.ts, its build name src/present.js, ./present.ts and ../docs/design.md.',
      '// Missing: src/moved.ts.',
      '/**',
      ' * Missing in a block comment: ./sub/gone.md',
      ' */',
      "const s = 'src/in-a-string.ts // not a comment';",
      '// Skipped: https://example.com/a/b.json, test/*.ts, dist/src/x.js, node_modules/x/y.js, @scope/pkg/a.js,',
      '// DATA_DIR/ubscore/lock.json, src/db/migrations/NNNN_name.sql, examples/generated/api.d.ts, /tmp/x.json,',
      '// and a bare name.ts without a folder.',
      'export const t = s; // src/trailing-gone.yml',
      '',
    ].join('\n'),
    'actors/x.sql': "SELECT '-- src/string-in-sql.ts';\n-- names src/gone.sql\n/* and docs/missing.md */\n",
  });
  try {
    assert.equal(lines(checkTree(root)), [
      'actors/x.sql:2: names src/gone.sql, which does not exist',
      'actors/x.sql:3: names docs/missing.md, which does not exist',
      'src/db/migrations/repeatable/f.sql:1: names src/db/gone-too.ts, which does not exist',
      'src/names.ts:10: names src/trailing-gone.yml, which does not exist',
      'src/names.ts:2: names src/moved.ts, which does not exist',
      'src/names.ts:4: names ./sub/gone.md, which does not exist',
    ]);
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
});

test('a tracker number in a comment, a test name or a page of the manual fails', async () => {
  const root = await scratchTree({
    'wal/a.ts': `// Bounded (${TICKET}).\nexport const a = 1;\n`,
    'test/b.test.ts': `test('${TICKET.toUpperCase()}: it holds', () => {});\n`,
    'docs/ops.md': `# Ops\n\nSince ${TICKET}, it holds.\n`,
    'README.md': `No ticket here: ${['a tissue', '3'].join(' ')} is no ticket, nor is an issue without a number.\n`,
    'bench/results/old.md': `${TICKET}: results are kept as they were written.\n`,
  });
  try {
    const ticket = (word: string) => `cites a ticket ("${word}"): say the reason instead`;
    assert.equal(lines(checkTree(root)), [
      `docs/ops.md:3: ${ticket(TICKET)}`,
      `test/b.test.ts:1: ${ticket(TICKET.toUpperCase())}`,
      `wal/a.ts:1: ${ticket(TICKET)}`,
    ]);
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
});

test('the tree itself passes the comment check', () => {
  assert.equal(lines(checkTree(PROJECT_ROOT)), []);
});

test.run();
