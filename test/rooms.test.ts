// Proves bench/ and the drill's home (test/drill/) keep the product's room sizes as `wc -l` counts
// them: no file over 400 lines, no folder holding more than 25 files directly. Biome's
// noExcessiveLinesPerFile (biome.json) counts blank lines there too but not the lines inside a
// block comment, so this counts newlines itself.

import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROJECT_ROOT } from './support/process.js';

const FILE_LINES_MAX = 400;
const FOLDER_FILES_MAX = 25;
/** Folders of results a run writes, not code. */
const NOT_CODE = new Set(['bench/results']);

type Room = { readonly dir: string; readonly files: readonly string[] };

async function rooms(dir: string): Promise<Room[]> {
  const rel = path.relative(PROJECT_ROOT, dir);
  if (NOT_CODE.has(rel)) return [];
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => path.join(rel, e.name));
  const below = await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => rooms(path.join(dir, e.name))));
  return [{ dir: rel, files }, ...below.flat()];
}

const houses = ['bench', path.join('test', 'drill')];

test('no file in bench/ or test/drill/ runs over 400 lines by wc -l', async () => {
  const over: string[] = [];
  for (const house of houses)
    for (const room of await rooms(path.join(PROJECT_ROOT, house)))
      for (const file of room.files) {
        const text = await fs.readFile(path.join(PROJECT_ROOT, file), 'utf8');
        const lines = text.split('\n').length - 1;
        if (lines > FILE_LINES_MAX) over.push(`${file}: ${lines}`);
      }
  assert.equal(over, []);
});

test('no folder in bench/ or test/drill/ holds more than 25 files directly', async () => {
  const crowded: string[] = [];
  for (const house of houses)
    for (const room of await rooms(path.join(PROJECT_ROOT, house)))
      if (room.files.length > FOLDER_FILES_MAX) crowded.push(`${room.dir}: ${room.files.length}`);
  assert.equal(crowded, []);
});

test.run();
