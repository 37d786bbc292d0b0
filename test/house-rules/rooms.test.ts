// Proves the house keeps its room sizes as `wc -l` counts them: no file over 400 lines in src/, actors/,
// wal/, bench/, the drills' homes (test/drill/, test/failover/) and the test helpers (test/support/,
// test/contract/; a *.test.ts file is a test, not a helper, and is not held to it), and no folder holding
// more than 25 files directly there or anywhere in test/. Biome's noExcessiveLinesPerFile (biome.json) counts blank lines too but not the lines
// inside a block comment, so this counts newlines itself. The schema migrations are left out of
// the line count: an applied migration may never change (src/db/migrations.ts refuses an edited
// one), so a long one stays as it was applied.

import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROJECT_ROOT } from '../support/process.js';

const FILE_LINES_MAX = 400;
const FOLDER_FILES_MAX = 25;
/** Folders of results a run writes, not code. */
const NOT_CODE = new Set(['bench/results', path.join('test', 'artifacts')]);
/** Applied migrations are frozen by their checksums: their length is history, not a room to split. */
const FROZEN = /^src\/db\/migrations\/\d{4}_.*\.sql$/;

type Room = { readonly dir: string; readonly files: readonly string[] };

async function rooms(dir: string): Promise<Room[]> {
  const rel = path.relative(PROJECT_ROOT, dir);
  if (NOT_CODE.has(rel)) return [];
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => path.join(rel, e.name));
  const below = await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => rooms(path.join(dir, e.name))));
  return [{ dir: rel, files }, ...below.flat()];
}

const houses = ['src', 'actors', 'wal', 'bench', path.join('test', 'drill'), path.join('test', 'failover')];
/** The helpers the tests share: held to the code's file size. */
const helperHouses = [path.join('test', 'support'), path.join('test', 'contract')];
/** A test file: not a room whose length is held (a helper beside it is). */
const TEST_FILE = /\.test\.ts$/;

test('no file in src/, actors/, wal/, bench/, test/drill/, test/failover/ or the test helpers runs over 400 lines by wc -l', async () => {
  const over: string[] = [];
  for (const house of [...houses, ...helperHouses])
    for (const room of await rooms(path.join(PROJECT_ROOT, house)))
      for (const file of room.files) {
        if (FROZEN.test(file) || TEST_FILE.test(file)) continue;
        const text = await fs.readFile(path.join(PROJECT_ROOT, file), 'utf8');
        const lines = text.split('\n').length - 1;
        if (lines > FILE_LINES_MAX) over.push(`${file}: ${lines}`);
      }
  assert.equal(over, []);
});

test('no folder in src/, actors/, wal/, bench/ or test/ holds more than 25 files directly', async () => {
  const crowded: string[] = [];
  for (const house of [...houses, 'test'])
    for (const room of await rooms(path.join(PROJECT_ROOT, house)))
      if (room.files.length > FOLDER_FILES_MAX) crowded.push(`${room.dir}: ${room.files.length}`);
  assert.equal(crowded, []);
});

test.run();
