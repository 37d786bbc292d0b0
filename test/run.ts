// The whole suite: starts one embedded PostgreSQL for every test file, runs each file in its
// own process (so a file may start and kill services freely), and prints one closing line.

import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScratchPg } from './support/database.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FILE_TIMEOUT_MS = 5 * 60_000;

type FileResult = { file: string; passed: number; failed: number; code: number | null; ms: number };

async function main(): Promise<void> {
  const filter = process.argv[2];
  // Matched against the path under the test directory: a checkout whose own path holds the
  // filter word (a worktree named wt-bench) must not select every file.
  const files = (await listTests(here)).filter((f) => filter === undefined || path.relative(here, f).includes(filter));
  const server = await testServer();
  const results: FileResult[] = [];
  try {
    for (const file of files) results.push(await runFile(file, server.adminUrl));
  } finally {
    await server.stop();
  }
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const failed = results.reduce((n, r) => n + r.failed + (r.code !== 0 && r.failed === 0 ? 1 : 0), 0);
  for (const r of results) {
    const mark = r.code === 0 ? 'ok  ' : 'FAIL';
    process.stdout.write(
      `${mark} ${path.relative(here, r.file)}  ${r.passed} passed, ${r.failed} failed  (${(r.ms / 1000).toFixed(1)} s)\n`,
    );
  }
  process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  process.exit(failed === 0 && results.length > 0 ? 0 : 1);
}

/**
 * The PostgreSQL server every file's databases are made on: the one TEST_PG_ADMIN_URL names
 * (`make test-external` passes a system server's), else an embedded one started for the run.
 */
async function testServer(): Promise<{ adminUrl: string; stop: () => Promise<void> }> {
  const given = process.env.TEST_PG_ADMIN_URL;
  if (given !== undefined && given !== '') {
    process.stdout.write(`tests on the PostgreSQL server of TEST_PG_ADMIN_URL (${new URL(given).host})\n`);
    return { adminUrl: given, stop: async () => undefined };
  }
  const scratch = await startScratchPg('transfer-test-pg-');
  return { adminUrl: scratch.pg.url('postgres'), stop: scratch.stop };
}

/** Compiled tests whose TypeScript source still exists (a deleted test leaves its .js behind). */
async function listTests(dir: string): Promise<string[]> {
  const sources = path.resolve(dir, '..', '..', 'test');
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true });
  const compiled = entries.filter((e) => e.isFile() && e.name.endsWith('.test.js')).map((e) => path.join(e.parentPath, e.name));
  const kept: string[] = [];
  for (const file of compiled) {
    const source = path.join(sources, path.relative(dir, file)).replace(/\.js$/, '.ts');
    if (
      await fs.access(source).then(
        () => true,
        () => false,
      )
    )
      kept.push(file);
  }
  return kept.sort();
}

function runFile(file: string, adminUrl: string): Promise<FileResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], {
      env: { ...process.env, TEST_PG_ADMIN_URL: adminUrl, LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      process.stdout.write(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      const clean = out.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
      const total = Number(/Total:\s+(\d+)/.exec(clean)?.[1] ?? 0);
      const passed = Number(/Passed:\s+(\d+)/.exec(clean)?.[1] ?? 0);
      resolve({ file, passed, failed: Math.max(0, total - passed), code, ms: Date.now() - started });
    });
  });
}

void main();
