// The whole suite: starts one embedded PostgreSQL for every test file, runs each file in its
// own process (so a file may start and kill services freely), TEST_JOBS of them at a time, and
// prints one closing line. A process a file leaves running (a service, a PostgreSQL server, a
// CLI) fails that file and is killed: left alive it holds what the next files reuse (a port, a
// deleted DATA_DIR's inode, a database).
//
// Two marks a file may carry in a line of its own source:
//   `// test-runner: alone`: it runs with no other file beside it (it times something, or stalls
//     a whole PostgreSQL server or the machine), after the others.
//   `// test-runner: own-postgres`: it starts PostgreSQL servers of its own and never uses the
//     runner's; given a server (make test-external) the runner leaves it out, as it would only
//     repeat what `make test` ran.
//   `// test-runner: no-postgres`: it uses no PostgreSQL at all (pure logic, UBSCore and its WAL,
//     the HTTP wire); it gets a TEST_PG_ADMIN_URL that nothing listens on, so a database it asks
//     for fails loudly, and given a server (make test-external) the runner leaves it out too.

import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScratchPg } from './support/database.js';
import { endLeftovers, suiteProcesses } from './suite-processes.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const FILE_TIMEOUT_MS = 5 * 60_000;
/**
 * Files at a time. One by default: two at a time ran the suite in 11 minutes instead of 14.5 on
 * 2 cores, but on a machine already loaded (a load average of 10) timing tests then failed (a
 * lease, a drain, a periodic check); CI keeps the order that has always held. TEST_JOBS=2 for a
 * faster run on a quiet machine.
 */
const TEST_JOBS_DEFAULT = 1;
const TEST_JOBS_MAX = 8;
/** How long a file's processes may take to end once its last test is done (a service draining a SIGTERM). */
const LEFTOVER_GRACE_MS = 5_000;
const LEFTOVER_POLL_MS = 100;

type Marks = { readonly alone: boolean; readonly ownPostgres: boolean; readonly noPostgres: boolean };

/** The admin URL a `no-postgres` file gets: nothing listens on port 1. */
const NO_POSTGRES_URL = 'postgres://no-postgres@127.0.0.1:1/postgres';

type FileResult = {
  file: string;
  passed: number;
  failed: number;
  code: number | null;
  ms: number;
  leftovers: number;
  /** Each failed test's name and the first line of what it asserted, from uvu's report. */
  failures: string[];
};

async function main(): Promise<void> {
  const filter = process.argv[2];
  // Matched against the path under the test directory: a checkout whose own path holds the
  // filter word (a worktree named wt-bench) must not select every file.
  const external = process.env.TEST_PG_ADMIN_URL !== undefined && process.env.TEST_PG_ADMIN_URL !== '';
  const listed = (await listTests(here)).filter((t) => filter === undefined || path.relative(here, t.file).includes(filter));
  const left = external ? listed.filter((t) => t.marks.ownPostgres || t.marks.noPostgres) : [];
  for (const t of left)
    process.stdout.write(
      `left out: ${path.relative(here, t.file)} (${t.marks.ownPostgres ? 'its own PostgreSQL servers only' : 'no PostgreSQL'})\n`,
    );
  const files = listed.filter((t) => !left.includes(t));
  const jobs = testJobs(process.env.TEST_JOBS);
  const server = await testServer();
  const results: FileResult[] = [];
  try {
    await runPool(
      files.filter((t) => !t.marks.alone),
      jobs,
      server,
      results,
    );
    await runPool(
      files.filter((t) => t.marks.alone),
      1,
      server,
      results,
    );
  } finally {
    await server.stop();
  }
  results.sort((a, b) => a.file.localeCompare(b.file));
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const failed = results.reduce((n, r) => n + r.failed + ((r.code !== 0 && r.failed === 0) || r.leftovers > 0 ? 1 : 0), 0);
  for (const r of results) {
    const mark = r.code === 0 && r.leftovers === 0 ? 'ok  ' : 'FAIL';
    const left = r.leftovers === 0 ? '' : `, left ${r.leftovers} processes running`;
    process.stdout.write(
      `${mark} ${path.relative(here, r.file)}  ${r.passed} passed, ${r.failed} failed${left}  (${(r.ms / 1000).toFixed(1)} s)\n`,
    );
  }
  // Repeated last, where the tail of a CI log shows them: which tests failed, and why in a line.
  for (const r of results) {
    const name = path.relative(here, r.file);
    for (const f of r.failures) process.stdout.write(`failed: ${name}: ${f}\n`);
    if (r.code !== 0 && r.failures.length === 0)
      process.stdout.write(`failed: ${name}: ended with code ${r.code} before any test failed\n`);
    if (r.leftovers > 0) process.stdout.write(`failed: ${name}: left ${r.leftovers} processes running\n`);
  }
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exit(failed === 0 && results.length > 0 ? 0 : 1);
}

/**
 * The PostgreSQL server every file's databases are made on: the one TEST_PG_ADMIN_URL names
 * (`make test-external` passes a system server's), else an embedded one started for the run.
 */
type TestServer = { readonly adminUrl: string; readonly dir: string | null; readonly stop: () => Promise<void> };

async function testServer(): Promise<TestServer> {
  const given = process.env.TEST_PG_ADMIN_URL;
  if (given !== undefined && given !== '') {
    process.stdout.write(`tests on the PostgreSQL server of TEST_PG_ADMIN_URL (${new URL(given).host})\n`);
    return { adminUrl: given, dir: null, stop: async () => undefined };
  }
  const scratch = await startScratchPg('transfer-test-pg-');
  return { adminUrl: scratch.pg.url('postgres'), dir: scratch.dir, stop: scratch.stop };
}

function testJobs(raw: string | undefined): number {
  const jobs = Number(raw ?? TEST_JOBS_DEFAULT);
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > TEST_JOBS_MAX)
    throw new Error(`TEST_JOBS must be a whole number from 1 to ${TEST_JOBS_MAX}, got ${raw}`);
  return jobs;
}

/**
 * Runs `files`, `jobs` at a time, each result pushed as it ends. What a file leaves running fails
 * it; beside other files (jobs > 1) a process cannot be told to one file, so the pool's last file
 * to end carries what all of them left.
 */
async function runPool(files: readonly Listed[], jobs: number, server: TestServer, results: FileResult[]): Promise<void> {
  let next = 0;
  let running = 0;
  let before = new Set((await suiteProcesses(root, server.dir)).map((p) => p.pid));
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const t = files[next++] as Listed;
      running++;
      const result = await runFile(t.file, t.marks.noPostgres ? NO_POSTGRES_URL : server.adminUrl, jobs > 1);
      running--;
      if (running === 0 && (jobs === 1 || next >= files.length)) {
        const left = await endLeftovers(before, () => suiteProcesses(root, server.dir), LEFTOVER_GRACE_MS, LEFTOVER_POLL_MS);
        for (const p of left) process.stdout.write(`left running by ${path.relative(here, t.file)}: pid ${p.pid} ${p.command}\n`);
        result.leftovers = left.length;
        before = new Set((await suiteProcesses(root, server.dir)).map((p) => p.pid));
      }
      results.push(result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, worker));
}

/** A file's marks, from lines of its source that are exactly the mark. */
function marksOf(source: string): Marks {
  const lines = new Set(source.split('\n').map((l) => l.trim()));
  return {
    alone: lines.has('// test-runner: alone'),
    ownPostgres: lines.has('// test-runner: own-postgres'),
    noPostgres: lines.has('// test-runner: no-postgres'),
  };
}

/** Compiled tests whose TypeScript source still exists (a deleted test leaves its .js behind), with their marks. */
type Listed = { readonly file: string; readonly marks: Marks };

async function listTests(dir: string): Promise<Listed[]> {
  const sources = path.resolve(dir, '..', '..', 'test');
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true });
  const compiled = entries.filter((e) => e.isFile() && e.name.endsWith('.test.js')).map((e) => path.join(e.parentPath, e.name));
  const kept: Listed[] = [];
  for (const file of compiled) {
    const source = path.join(sources, path.relative(dir, file)).replace(/\.js$/, '.ts');
    const text = await fs.readFile(source, 'utf8').catch(() => null);
    if (text !== null) kept.push({ file, marks: marksOf(text) });
  }
  return kept.sort((a, b) => a.file.localeCompare(b.file));
}

/** Runs one file; beside others (`buffered`) its output is written whole when it ends, so files never interleave. */
function runFile(file: string, adminUrl: string, buffered: boolean): Promise<FileResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], {
      env: { ...process.env, TEST_PG_ADMIN_URL: adminUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!buffered) process.stdout.write(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (buffered) process.stdout.write(out);
      const clean = out.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
      const total = Number(/Total:\s+(\d+)/.exec(clean)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(clean)?.[1] ?? 0);
      resolve({
        file,
        passed,
        failed: Math.max(0, total - passed),
        code,
        ms: Date.now() - started,
        leftovers: 0,
        failures: failuresOf(clean),
      });
    });
  });
}

/**
 * uvu's report of each failed test: `FAIL  "name"` and, on the next line, the assertion's message.
 * A file that ended without its report (a crash, the timeout) says so by its code instead.
 */
function failuresOf(report: string): string[] {
  const lines = report.split('\n');
  const found: string[] = [];
  lines.forEach((line, i) => {
    const name = /^\s*FAIL\s+"(.*)"\s*$/.exec(line)?.[1];
    if (name === undefined) return;
    const why = (lines[i + 1] ?? '').trim();
    found.push(why === '' ? name : `${name}: ${why.slice(0, 300)}`);
  });
  return found;
}

void main();
