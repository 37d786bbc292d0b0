// Proves the start-up check of src/limits.ts: the table of every limit holds and names each one, each kind of broken
// row (a range upside down, a default outside its range, a cap of zero, a batch above the queue it
// feeds) fails loudly with the limit's name, loading the configuration runs the check, and the
// configuration table of docs/configuration.md names exactly the variables the configuration reads.

import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COORDINATOR_SETTINGS, coordinatorSettings, loadConfig } from '../../src/config/config.js';
import { checkLimit, checkLimits, LIMIT_ROWS, LimitError, type LimitRow } from '../../src/limits-check.js';
import { PROJECT_ROOT } from '../support/process.js';

/** Runs the check on `rows` and answers the LimitError's message, or null when the table holds. */
function failure(rows: readonly LimitRow[]): string | null {
  try {
    checkLimits(rows);
    return null;
  } catch (error) {
    assert.instance(error, LimitError);
    return (error as LimitError).message;
  }
}

test('the table of every limit holds', () => {
  assert.is(failure(LIMIT_ROWS), null);
  assert.ok(LIMIT_ROWS.length > 100, `every limit is in the table, got ${LIMIT_ROWS.length} rows`);
});

test('every limit of src/limits.ts has a row in the start-up check', async () => {
  const source = (name: string) => fs.readFile(path.join(PROJECT_ROOT, 'src', name), 'utf8');
  const limits = [...(await source('limits.ts')).matchAll(/^export const ([A-Z0-9_]+) =/gm)].map((m) => m[1] as string);
  const check = await source('limits-check.ts');
  assert.ok(limits.length > 100, `src/limits.ts holds every limit, got ${limits.length}`);
  assert.equal(
    limits.filter((name) => !new RegExp(`\\blimit\\.${name}\\b`).test(check)),
    [],
    'limits not checked at start-up',
  );
});

test('a broken row fails with the name of its limit', () => {
  const broken: readonly [LimitRow, RegExp][] = [
    [{ kind: 'range', name: 'PORT', min: 10, max: 9 }, /^PORT: its minimum 10 is above its maximum 9$/],
    [{ kind: 'range', name: 'PORT', min: -1, max: 9 }, /^PORT: its range -1\.\.9 must be whole numbers from 0$/],
    [{ kind: 'range', name: 'PORT', min: 0, max: 1.5 }, /^PORT: its range/],
    [{ kind: 'range', name: 'HISTORY_LIMIT', min: 1, max: 100, fallback: 101 }, /^HISTORY_LIMIT: its default 101 is outside 1\.\.100$/],
    [{ kind: 'range', name: 'HISTORY_LIMIT', min: 1, max: 100, fallback: 0 }, /^HISTORY_LIMIT: its default 0 is outside/],
    [{ kind: 'positive', name: 'SUBMIT_BATCH_MAX', value: 0 }, /^SUBMIT_BATCH_MAX must be a positive whole number, got 0$/],
    [{ kind: 'positive', name: 'SUBMIT_BATCH_MAX', value: Number.POSITIVE_INFINITY }, /^SUBMIT_BATCH_MAX must be a positive/],
    [
      { kind: 'at_most', name: 'UBS_CLIENT_BATCH_MAX_DEFAULT', value: 2048, boundName: 'UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT', bound: 1024 },
      /^UBS_CLIENT_BATCH_MAX_DEFAULT \(2048\) must not exceed UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT \(1024\)$/,
    ],
  ];
  for (const [row, message] of broken) {
    const got = failure([...LIMIT_ROWS, row]);
    assert.ok(got !== null && message.test(got), `${JSON.stringify(row)}: ${got}`);
    assert.throws(() => checkLimit(row), message);
  }
});

test("the table's own relations catch a batch above the queue it feeds", () => {
  // The table with one relation's bound lowered below its value, as a hand-copied bound would drift.
  const drifted = LIMIT_ROWS.map((row) =>
    row.kind === 'at_most' && row.name === 'OP_SEQS_BATCH_MAX' ? { ...row, bound: row.value - 1 } : row,
  );
  assert.match(failure(drifted) ?? '', /^OP_SEQS_BATCH_MAX \(5000\) must not exceed OP_SEQS_KEYS_MAX \(4999\)$/);
});

test('loading the configuration checks the limits and the ranges of what it reads', () => {
  assert.throws(() => loadConfig({ COORDINATOR_MAILBOX_MAX: '0' }), /COORDINATOR_MAILBOX_MAX must be between 1 and 1000000, got 0/);
  assert.throws(() => loadConfig({ UBS_BATCH_MAX: '100001' }), /UBS_BATCH_MAX must be between 1 and 100000, got 100001/);
  assert.is(loadConfig({ UBS_BATCH_MAX: '100000' }).ubsBatchMax, 100_000);
  const source = LIMIT_ROWS.find((row) => row.name === 'COORDINATORS');
  assert.ok(source !== undefined && source.kind === 'range' && source.min === 1 && source.max === 64);
});

test("a coordinator receives the configuration's coordinator section whole, and nothing else of it", () => {
  const config = loadConfig({ RETRY_BASE_MS: '7', JWT_SECRET: 'x'.repeat(40) });
  const section = coordinatorSettings(config);
  assert.equal(Object.keys(section).sort(), [...COORDINATOR_SETTINGS].sort());
  assert.is(section.retryBaseMs, 7);
  assert.is((section as Record<string, unknown>).jwt, undefined);
});

test('the configuration table of docs/configuration.md names exactly the variables the configuration reads', async () => {
  const read = new Set<string>();
  loadConfig(
    new Proxy({} as Record<string, string>, {
      get(_target, name) {
        if (typeof name === 'string') read.add(name);
        return undefined;
      },
    }),
  );
  const doc = await fs.readFile(path.join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
  const start = doc.indexOf('| variable | default | meaning |');
  assert.ok(start >= 0, 'docs/configuration.md has the configuration table');
  const rows = doc.slice(start).split('\n\n')[0]?.split('\n').slice(2) ?? [];
  const documented = new Set(
    rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] as string)),
  );
  // Read by other entry points: make backup / make restore, and make test-browser.
  for (const other of ['BACKUP_DIR', 'SERVICE_URL', 'ADMIN_TOKEN', 'CHROMIUM_PATH']) documented.delete(other);
  assert.equal([...read].filter((name) => !documented.has(name)).sort(), [], 'read but not in docs/configuration.md');
  assert.equal([...documented].filter((name) => !read.has(name)).sort(), [], 'in docs/configuration.md but not read');
});

test.run();
