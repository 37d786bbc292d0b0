// Proves that the lint rules `make lint` runs (biome.json) catch what the house forbids: an import
// cycle (a type-only one included), src/domain importing anything outside itself, src/ or wal/
// importing actors/ or a thread library (node:worker_threads, piscina, comlink; the bare name
// `worker_threads` is refused as well, and Biome's useNodejsImportProtocol refuses it first), a
// file over 400 lines or a function over 70 in src/, actors/ or wal/, and the same sizes in bench/,
// test/drill/, test/failover/ and the test helpers (test/support/, test/contract/ but for its *.test.ts; blank
// lines counted); and that they stay quiet where the house allows it (actors/ importing src/ and the thread
// libraries, test files).
// Each case is a small file in a scratch tree linted with the project's own configuration.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROJECT_ROOT } from '../support/process.js';

const BIOME = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'biome');

type Diagnostic = { category: string; location: { path: string } };

function lines(n: number, make: (i: number) => string): string {
  return Array.from({ length: n }, (_, i) => make(i)).join('\n');
}

/** Each scratch file and the rule it must trip (null: it must lint clean). */
const CASES: readonly { file: string; text: string; rule: string | null }[] = [
  { file: 'src/domain/reads-disk.ts', text: "import fs from 'node:fs';\nexport const f = fs;\n", rule: 'lint/style/noRestrictedImports' },
  { file: 'src/domain/logs.ts', text: "import { log } from '../log.js';\nexport const l = log;\n", rule: 'lint/style/noRestrictedImports' },
  {
    file: 'src/domain/validates.ts',
    text: "import * as v from 'valibot';\nexport const s = v.string();\n",
    rule: 'lint/style/noRestrictedImports',
  },
  { file: 'src/domain/pure.ts', text: "import { n } from './money.js';\nexport const m = n;\n", rule: null },
  { file: 'src/domain/money.ts', text: 'export const n = 1n;\n', rule: null },
  { file: 'src/log.ts', text: 'export const log = 1;\n', rule: null },
  {
    file: 'src/starts-thread.ts',
    text: "import { y } from '../actors/pool.js';\nexport const s = y;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  {
    file: 'wal/knows-thread.ts',
    text: "import type { Y } from '../actors/pool.js';\nexport type W = Y;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  { file: 'actors/pool.ts', text: "import { log } from '../src/log.js';\nexport const y = log;\nexport type Y = number;\n", rule: null },
  { file: 'src/http/app.ts', text: 'export const app = 1;\n', rule: null },
  { file: 'src/limits.ts', text: 'export const MAX = 1;\n', rule: null },
  { file: 'src/ubscore/engine.ts', text: "import { log } from '../log.js';\nexport const e = log;\n", rule: null },
  {
    file: 'src/ubscore/serves-edge.ts',
    text: "import { app } from '../http/app.js';\nexport const s = app;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  {
    file: 'wal/reads-engine.ts',
    text: "import { e } from '../src/ubscore/engine.js';\nexport const w = e;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  {
    file: 'wal/reads-leaves.ts',
    text: "import { MAX } from '../src/limits.js';\nimport { n } from '../src/domain/money.js';\nexport const w = [MAX, n];\n",
    rule: null,
  },
  {
    file: 'src/starts-worker.ts',
    text: "import { Worker } from 'node:worker_threads';\nexport const w = Worker;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  { file: 'src/pools.ts', text: "import { Piscina } from 'piscina';\nexport const p = Piscina;\n", rule: 'lint/style/noRestrictedImports' },
  {
    file: 'wal/remote.ts',
    text: "import type { Remote } from 'comlink';\nexport type R = Remote<number>;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  {
    file: 'src/comlink-adapter.ts',
    text: "import adapter from 'comlink/dist/umd/node-adapter.js';\nexport const a = adapter;\n",
    rule: 'lint/style/noRestrictedImports',
  },
  {
    file: 'actors/thread.ts',
    text: "import { Worker } from 'node:worker_threads';\nimport { Piscina } from 'piscina';\nimport { wrap } from 'comlink';\nexport const t = [Worker, Piscina, wrap];\n",
    rule: null,
  },
  {
    file: 'src/a.ts',
    text: "import { b } from './b.js';\nexport const a = b;\nexport type A = number;\n",
    rule: 'lint/suspicious/noImportCycles',
  },
  { file: 'src/b.ts', text: "import type { A } from './a.js';\nexport const b: A = 1;\n", rule: 'lint/suspicious/noImportCycles' },
  { file: 'src/long-file.ts', text: `${lines(401, (i) => `export const c${i} = ${i};`)}\n`, rule: 'lint/style/noExcessiveLinesPerFile' },
  {
    file: 'wal/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(70, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'actors/function-at-limit.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(68, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: null,
  },
  // bench/ and the drills' homes hold the same sizes, and there blank lines count as `wc -l` counts them.
  {
    file: 'bench/load/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(35, () => '  x += 1;\n')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'test/drill/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(70, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'test/failover/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(70, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'bench/blank-lines.ts',
    text: `${lines(201, (i) => `export const c${i} = ${i};\n`)}\n`,
    rule: 'lint/style/noExcessiveLinesPerFile',
  },
  // The helpers of test/support/ and test/contract/ hold them too; the test files themselves do not.
  {
    file: 'test/support/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(70, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'test/support/long-file.ts',
    text: `${lines(401, (i) => `export const c${i} = ${i};`)}\n`,
    rule: 'lint/style/noExcessiveLinesPerFile',
  },
  {
    file: 'test/contract/long-function.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(70, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: 'lint/complexity/noExcessiveLinesPerFunction',
  },
  {
    file: 'test/contract/long-test.test.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(90, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: null,
  },
  {
    file: 'test/transfers/long-test.test.ts',
    text: `export function f(): number {\n  let x = 0;\n${lines(90, () => '  x += 1;')}\n  return x;\n}\n`,
    rule: null,
  },
];

test('the lint rules catch import cycles, forbidden imports and oversized rooms, and allow the rest', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-lint-'));
  try {
    const config = JSON.parse(await fs.readFile(path.join(PROJECT_ROOT, 'biome.json'), 'utf8')) as Record<string, unknown>;
    // The scratch tree is no git checkout: the project's .gitignore does not apply to it.
    delete config.vcs;
    delete config.$schema;
    await fs.writeFile(path.join(dir, 'biome.json'), JSON.stringify(config));
    for (const c of CASES) {
      await fs.mkdir(path.join(dir, path.dirname(c.file)), { recursive: true });
      await fs.writeFile(path.join(dir, c.file), c.text);
    }
    const run = spawnSync(BIOME, ['lint', '--reporter=json', '--max-diagnostics=none'], { cwd: dir, encoding: 'utf8' });
    const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
    const found = new Map<string, Set<string>>();
    for (const d of report.diagnostics) found.set(d.location.path, (found.get(d.location.path) ?? new Set()).add(d.category));
    for (const c of CASES) {
      const rules = [...(found.get(c.file) ?? [])];
      assert.equal(rules, c.rule === null ? [] : [c.rule], `${c.file}: ${c.rule ?? 'clean'}`);
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test.run();
