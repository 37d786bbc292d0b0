// Proves the README is a front door whose map is true: README.md is at most 250 lines, its "Where
// things are" starts within the first 120, and every pointer of that section names a file or
// folder of the tree and, after a file, only names that file defines.

import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROJECT_ROOT } from '../support/process.js';

const README_LINES_MAX = 250;
const MAP_START_LINE_MAX = 120;
const MAP_HEADING = '## Where things are';

/** A code span that names a path: it holds a slash, or ends in one of the tree's file kinds. */
const PATH_LIKE = /\/|^(?:Makefile|Dockerfile)$|\.(?:ts|js|sql|json|md|yaml|yml|sh|css|html|svg|png)$/;
/** A code span that names a symbol of the file before it: `name`, `Class.method`, `name()`. */
const SYMBOL = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?(?:\(\))?$/;

type MapSection = { readonly startLine: number; readonly text: string };

/** The "Where things are" section: from its heading to the next heading of its level or above. */
function mapSection(readme: string): MapSection | null {
  const lines = readme.split('\n');
  const start = lines.indexOf(MAP_HEADING);
  if (start < 0) return null;
  const after = lines.slice(start + 1).findIndex((line) => /^#{1,2} /.test(line));
  const end = after < 0 ? lines.length : start + 1 + after;
  return { startLine: start + 1, text: lines.slice(start + 1, end).join('\n') };
}

function escaped(name: string): string {
  return name.replace(/[$]/g, '\\$');
}

/** A method or function written at the start of a line: `name(`, `async name(`, `private get name<T>(`. */
function methodPattern(name: string): RegExp {
  return new RegExp(
    `^\\s*(?:(?:public|private|protected|static|async|readonly|override|get|set)\\s+)*${escaped(name)}\\s*(?:<[^>]*>)?\\(`,
    'm',
  );
}

/** Whether `source` defines `name` in one of the ways TypeScript and the migrations write one. */
function defines(source: string, name: string): boolean {
  const n = escaped(name);
  return [
    new RegExp(`\\b(?:function\\*?|class|const|let|var|type|interface|enum)\\s+${n}\\b`),
    new RegExp(`\\bexport\\s*(?:type\\s*)?\\{[^}]*\\b${n}\\b[^}]*\\}`),
    new RegExp(`\\bFUNCTION\\s+${n}\\s*\\(`, 'i'),
    methodPattern(name),
  ].some((pattern) => pattern.test(source));
}

/** Whether `source` defines class `owner` with a method (or field function) `member` after its start. */
function definesMember(source: string, owner: string, member: string): boolean {
  const at = new RegExp(`\\bclass\\s+${escaped(owner)}\\b`).exec(source);
  if (at === null) return false;
  const rest = source.slice(at.index + at[0].length);
  const next = /^(?:export\s+)?(?:abstract\s+)?class\s/m.exec(rest);
  return methodPattern(member).test(next === null ? rest : rest.slice(0, next.index));
}

/** Every pointer of the map that does not hold, as one readable line each. */
function mapProblems(section: string, root: string): string[] {
  const problems: string[] = [];
  let current: { readonly path: string; readonly source: string | null } | null = null;
  for (const [, span] of section.matchAll(/`([^`\n]+)`/g)) {
    const token = span as string;
    if (PATH_LIKE.test(token)) {
      const full = path.join(root, token);
      if (!existsSync(full)) {
        problems.push(`${token}: no such file or folder`);
        current = { path: token, source: null };
      } else if (statSync(full).isDirectory()) {
        current = { path: token, source: null };
      } else {
        current = { path: token, source: readFileSync(full, 'utf8') };
      }
      continue;
    }
    const symbol = SYMBOL.exec(token);
    // Anything else in backticks (a command, a body) is not a pointer.
    if (symbol === null) continue;
    if (current === null) {
      problems.push(`${token}: a symbol before any file`);
      continue;
    }
    if (current.source === null) {
      if (existsSync(path.join(root, current.path))) problems.push(`${token}: after the folder ${current.path}, which is not a file`);
      continue;
    }
    const [, owner, member] = symbol as unknown as [string, string, string | undefined];
    const found = member === undefined ? defines(current.source, owner) : definesMember(current.source, owner, member);
    if (!found) problems.push(`${token}: not defined in ${current.path}`);
  }
  return problems;
}

const readme = readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');

test(`README.md is at most ${README_LINES_MAX} lines, and "Where things are" starts within the first ${MAP_START_LINE_MAX}`, () => {
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= README_LINES_MAX, `README.md has ${lines} lines`);
  const section = mapSection(readme);
  assert.ok(section !== null, `README.md has a "${MAP_HEADING}" section`);
  assert.ok(section.startLine <= MAP_START_LINE_MAX, `the map starts at line ${section.startLine}`);
});

test('every pointer of the map names a file or folder that exists, and each symbol is defined in its file', () => {
  const section = mapSection(readme);
  assert.ok(section !== null);
  const pointers = [...section.text.matchAll(/`([^`\n]+)`/g)].length;
  assert.ok(pointers >= 50, `the map names ${pointers} things`);
  assert.equal(mapProblems(section.text, PROJECT_ROOT), []);
});

test('the check finds each kind of wrong pointer', () => {
  const wrong = [
    '`leading`: a symbol before any file',
    '`src/http/openapi/answers.ts` `transferJson`: a symbol the file does not define',
    '`src/http/no-such-file.ts`: a file that does not exist',
    '`src/coordinator/` `Shard`: a symbol after a folder',
    '`src/coordinator/driver.ts` `TransferDriver.nothing`: a method the class does not have',
    '`src/coordinator/driver.ts` `Shard.submit`: a class of another file',
  ].join('\n');
  assert.equal(mapProblems(wrong, PROJECT_ROOT), [
    'leading: a symbol before any file',
    'transferJson: not defined in src/http/openapi/answers.ts',
    'src/http/no-such-file.ts: no such file or folder',
    'Shard: after the folder src/coordinator/, which is not a file',
    'TransferDriver.nothing: not defined in src/coordinator/driver.ts',
    'Shard.submit: not defined in src/coordinator/driver.ts',
  ]);
  const right =
    '`src/http/routes/views.ts` `transferJson`; `src/coordinator/driver.ts` `TransferDriver.step`, `TransferDriver`; `make lint`';
  assert.equal(mapProblems(right, PROJECT_ROOT), []);
});

test.run();
