// A check `make lint` runs beside Biome, for what a reader of a comment relies on:
// - a repository path a comment names (`src/ownership/lease.ts`, `../support/process.ts`, `docs/design.md`) exists, so a
//   comment does not send its reader to a file that was moved or removed;
// - no comment, string or page cites a ticket of our tracker ("issue" and a number): its readers do not have the
//   tracker, so the comment says the reason itself.
// Paths are looked for in the comments of src/, actors/, wal/, bench/ and test/ (.ts: `//` and `/* */`; .sql: `--` and
// `/* */`); ticket numbers in the whole of those files and in README.md, bench/README.md and docs/*.md. The versioned
// schema migrations (src/db/migrations/NNNN_name.sql) are not read: an applied file must never change
// (src/db/migrations.ts keeps each one's SHA-256 and refuses a changed one), so a stale word in one stays. The
// repeatable SQL files beside them (src/db/migrations/repeatable/) are read: they change by diff, as code does.
// Usage: node dist/test/lint/comments.js [root] (the root defaults to the working directory).

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folders whose .ts and .sql files are read, relative to the root. */
export const SOURCE_FOLDERS = ['src', 'actors', 'wal', 'bench', 'test'] as const;
/** Never read: build outputs, installed packages, committed run results. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'bench/results', 'test/artifacts']);
/** The folder whose own files (the versioned migrations) are never read; its subfolders are. */
const FROZEN_FILES_FOLDER = 'src/db/migrations';
const PATH_ENDINGS = /\.(ts|js|sql|md|json|yml|yaml)$/;
/** Built so that this file does not match itself. */
const TICKET = new RegExp(`\\b${'issue'}\\s+#?\\d+`, 'i');

export type Problem = { file: string; line: number; message: string };

/** What a character of code starts: a comment, a string, or nothing (null). */
function codeState(c: string, next: string | undefined, sql: boolean): 'line' | 'block' | "'" | '"' | '`' | null {
  if ((!sql && c === '/' && next === '/') || (sql && c === '-' && next === '-')) return 'line';
  if (c === '/' && next === '*') return 'block';
  if (c === "'" || (!sql && (c === '"' || c === '`'))) return c;
  return null;
}

/** Every comment of a file as [line number (1-based), text] pairs, one per line a comment spans. */
export function commentLines(text: string, sql: boolean): [number, string][] {
  const out: [number, string][] = [];
  let line = 1;
  let state: 'code' | 'line' | 'block' | "'" | '"' | '`' = 'code';
  let current = '';
  const flush = (): void => {
    if (current.trim() !== '') out.push([line, current]);
    current = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '\n') {
      if (state === 'line' || state === 'block') flush();
      if (state === 'line' || state === "'" || state === '"') state = 'code';
      line++;
      continue;
    }
    if (state === 'line' || state === 'block') {
      if (state === 'block' && c === '*' && next === '/') {
        flush();
        state = 'code';
        i++;
      } else current += c;
    } else if (state === 'code') {
      const opens = codeState(c, next, sql);
      if (opens !== null) state = opens;
      if (c === '\\' || opens === 'line' || opens === 'block') i++;
    } else if (c === '\\' && !sql) i++;
    else if (c === state) state = 'code';
  }
  if (state === 'line' || state === 'block') flush();
  return out;
}

/**
 * The tokens of a comment that name a repository path: a run of path characters holding a `/` and ending in one of
 * PATH_ENDINGS. Left out by rule, as they name no file of the tree: URLs (`https://...`), globs and templates (`*`, `{`,
 * `<`, `$`, `...`), absolute and home paths (`/tmp/x.json`, `~/...`), build outputs (`dist/...`), installed packages
 * (`node_modules/...`, `@scope/...`), generated files (under a folder .gitignore names, e.g. `examples/generated/`), and
 * paths with a part in capitals, a variable or a placeholder (`DATA_DIR/ubscore/data.mdb`, `migrations/NNNN_name.sql`).
 */
export function pathTokens(comment: string, ignored: readonly string[] = []): string[] {
  const tokens: string[] = [];
  for (const m of comment.matchAll(/[\w.\-/*{}<>$@~]+/g)) {
    const before = comment[(m.index ?? 0) - 1];
    const token = m[0].replace(/[.-]+$/, '');
    if (!token.includes('/') || !PATH_ENDINGS.test(token)) continue;
    if (before === ':' || /[*{}<>$~]|\.\.\.|\/\//.test(token)) continue;
    if (/^(\/|@|dist\/|node_modules\/)|\/node_modules\//.test(token)) continue;
    if (/(^|\/)[A-Z][A-Z0-9]+(_|\/)/.test(token) || ignored.some((folder) => token.startsWith(folder))) continue;
    tokens.push(token);
  }
  return tokens;
}

/** Whether a path a comment in `file` names exists: from the file's folder for `./` and `../`, else from the root; a `.js` name may be its `.ts` source. */
export function pathExists(root: string, file: string, named: string): boolean {
  const base = named.startsWith('./') || named.startsWith('../') ? path.dirname(path.join(root, file)) : root;
  const full = path.join(base, named);
  return existsSync(full) || (full.endsWith('.js') && existsSync(full.replace(/\.js$/, '.ts')));
}

/** The folders .gitignore names (`examples/generated/`): what is under them is generated, not part of the tree. */
export function ignoredFolders(root: string): string[] {
  const file = path.join(root, '.gitignore');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim().replace(/^\//, ''))
    .filter((l) => l.endsWith('/') && !/[*!#]/.test(l));
}

/** The problems of one file's text, `file` relative to the root. */
export function checkText(root: string, file: string, text: string, ignored: readonly string[] = []): Problem[] {
  const problems: Problem[] = [];
  text.split('\n').forEach((l, i) => {
    const ticket = TICKET.exec(l);
    if (ticket) problems.push({ file, line: i + 1, message: `cites a ticket ("${ticket[0]}"): say the reason instead` });
  });
  if (!/\.(ts|sql)$/.test(file)) return problems;
  for (const [line, comment] of commentLines(text, file.endsWith('.sql'))) {
    for (const named of pathTokens(comment, ignored)) {
      if (!pathExists(root, file, named)) problems.push({ file, line, message: `names ${named}, which does not exist` });
    }
  }
  return problems;
}

function walk(root: string, folder: string, out: string[]): void {
  if (!existsSync(path.join(root, folder))) return;
  for (const entry of readdirSync(path.join(root, folder), { withFileTypes: true })) {
    const rel = path.posix.join(folder, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_FOLDERS.has(entry.name) && !SKIPPED_FOLDERS.has(rel)) walk(root, rel, out);
    } else if (/\.(ts|sql)$/.test(entry.name) && folder !== FROZEN_FILES_FOLDER) out.push(rel);
  }
}

/** The files the check reads, relative to the root. */
export function checkedFiles(root: string): string[] {
  const files: string[] = [];
  for (const folder of SOURCE_FOLDERS) walk(root, folder, files);
  const docs = existsSync(path.join(root, 'docs')) ? readdirSync(path.join(root, 'docs')).filter((n) => n.endsWith('.md')) : [];
  const pages = ['README.md', 'bench/README.md', ...docs.map((n) => `docs/${n}`)];
  return [...files, ...pages.filter((p) => existsSync(path.join(root, p)))];
}

/** Every problem of the tree under `root`. */
export function checkTree(root: string): Problem[] {
  const ignored = ignoredFolders(root);
  return checkedFiles(root).flatMap((file) => checkText(root, file, readFileSync(path.join(root, file), 'utf8'), ignored));
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkTree(path.resolve(process.argv[2] ?? '.'));
  for (const p of problems) process.stderr.write(`${p.file}:${p.line}: ${p.message}\n`);
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} comment problem(s)\n`);
    process.exit(1);
  }
}
