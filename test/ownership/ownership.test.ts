// Proves rule 7, exactly one owner of a SPOT ledger: a second process on the same database or the
// same DATA_DIR exits non-zero within seconds, names the owner and changes nothing; of processes
// starting at once on one DATA_DIR exactly one owns it; a DATA_DIR removed under its live owner
// refuses no directory made after it; a start whose database and WAL are not one
// ledger is refused; a restart after SIGKILL (even before the killed owner is reaped) takes over;
// and an owner whose lock connection is ended takes the lock again and goes on.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OwnershipError } from '../../src/ownership/errors.js';
import { lockDataDir } from '../../src/ownership/data-dir-lock.js';
import { decide } from '../../src/ubscore/spot-log/ledger-identity.js';
import { createTestDatabase } from '../support/database.js';
import { PROJECT_ROOT, pollUntil, withHarness, type Harness } from '../support/process.js';
import { fundAndMove as fund } from '../support/funds.js';

const REFUSED_EXIT_CODE = 3;
const REFUSAL_WITHIN_MS = 10_000;

async function ledgerRows(h: Harness): Promise<string> {
  const rows = await h.sql`
    SELECT (SELECT count(*) FROM transfers_tb)::int AS transfers, (SELECT coalesce(sum(available), 0) FROM funding_balances)::text AS funding,
           (SELECT count(*) FROM schema_migrations)::int AS migrations, (SELECT ledger_id::text FROM ledger_identity) AS ledger`;
  return JSON.stringify(rows[0]);
}

/** Starts a service expected to be refused; answers its exit and stderr. */
async function refusedStart(h: Harness, env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  const svc = await h.startToDie(env);
  const exit = await svc.waitForExit(REFUSAL_WITHIN_MS);
  return { code: exit.code, stderr: svc.stderrTail(), ms: Date.now() - started };
}

async function tempDir(prefix: string): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

test('rule 7: a second process on the same database exits non-zero within seconds, names the owner, changes nothing', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 31, 'own-db-1');
    const before = await ledgerRows(h);
    const otherDir = await tempDir('transfer-own-dir-');
    try {
      const second = await refusedStart(h, { DATA_DIR: otherDir });
      assert.is(second.code, REFUSED_EXIT_CODE, second.stderr);
      assert.ok(second.ms < REFUSAL_WITHIN_MS, `refused after ${second.ms} ms`);
      assert.match(second.stderr, /refused to start: the database is owned by another process/);
      assert.match(second.stderr, new RegExp(`transfer-${first.pid}-[0-9a-f]{6}@[^ ]+ owner lock`), 'names the owner');
      assert.equal(await fs.readdir(otherDir), [], 'nothing written in its DATA_DIR, and its lock released');
    } finally {
      await fs.rm(otherDir, { recursive: true, force: true });
    }
    assert.is(await ledgerRows(h), before, 'the ledger is unchanged');
    await fund(h, first, 32, 'own-db-2');
  });
});

test('rule 7: a second process on the same DATA_DIR exits non-zero, names the owner, and never touches its own database', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 33, 'own-dir-1');
    const other = await createTestDatabase();
    try {
      const second = await refusedStart(h, { DATABASE_URL: other.url });
      assert.is(second.code, REFUSED_EXIT_CODE, second.stderr);
      assert.match(second.stderr, new RegExp(`DATA_DIR \\S+ is owned by another process: pid ${first.pid} on `));
      const { openSql } = await import('../../src/db/sql.js');
      const sql = openSql(other.url, { max: 1, application: 'own-test' });
      try {
        const tables = await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`;
        assert.is(tables[0]?.n, 0, 'not even migrated');
      } finally {
        await sql.end({ timeout: 5 });
      }
    } finally {
      await other.drop();
    }
    await fund(h, first, 34, 'own-dir-2');
  });
});

test('ledger identity: a WAL from another database, a fresh WAL against a used database without the SPOT log, a used WAL against a fresh one are refused', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 35, 'own-id-1');
    await first.stop();
    const ledger = String((await h.sql`SELECT ledger_id::text AS id FROM ledger_identity`)[0]?.id);

    // Without the SPOT log in PostgreSQL (SPOT_LOG=off) nothing can rebuild a fresh WAL.
    const freshDir = await tempDir('transfer-own-fresh-');
    try {
      const r = await refusedStart(h, { DATA_DIR: freshDir, SPOT_LOG: 'off' });
      assert.is(r.code, REFUSED_EXIT_CODE, r.stderr);
      assert.match(r.stderr, new RegExp(`the WAL is empty but the database of ledger ${ledger} holds transfers and balances`));
      assert.equal(await fs.readdir(freshDir), [], 'no WAL environment created, and the DATA_DIR lock released');
    } finally {
      await fs.rm(freshDir, { recursive: true, force: true });
    }

    const empty = await createTestDatabase();
    try {
      const r = await refusedStart(h, { DATABASE_URL: empty.url });
      assert.is(r.code, REFUSED_EXIT_CODE, r.stderr);
      assert.match(r.stderr, new RegExp(`the database is empty but the WAL of ledger ${ledger} holds SPOT state`));
    } finally {
      await empty.drop();
    }

    await withHarness(async (other) => {
      const svc = await other.start();
      await fund(other, svc, 36, 'own-id-2');
      await svc.stop();
      const otherLedger = String((await other.sql`SELECT ledger_id::text AS id FROM ledger_identity`)[0]?.id);
      const r = await refusedStart(h, { DATABASE_URL: other.databaseUrl });
      assert.is(r.code, REFUSED_EXIT_CODE, r.stderr);
      assert.match(r.stderr, new RegExp(`the WAL belongs to ledger ${ledger} and the database to ledger ${otherLedger}`));
    });

    const again = await h.start();
    await fund(h, again, 37, 'own-id-3');
  });
});

test('rule 7: after the owner is killed with SIGKILL, a restart on the same DATA_DIR and database takes over', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 38, 'own-kill-1');
    await first.kill9();
    const next = await h.start();
    await fund(h, next, 39, 'own-kill-2');
  });
});

test('rule 7: an owner whose lock connection an operator ends takes no new work until it holds the lock again, then goes on without exiting', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 40, 'own-lost-1');
    const ownerName = `transfer-${first.pid}-%owner lock`;
    const killed = await h.sql`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE ${ownerName}`;
    assert.equal(
      killed.map((r) => r.ok),
      [true],
      'the owner connection was found and ended',
    );
    // The service notices (a critical line), then takes the lock again on a new session (the
    // server never went away), and work resumes. /readyz may still say 200 before it noticed.
    await pollUntil(async () => (/owner lock lost: not taking new work/.test(first.stderrTail()) ? true : undefined), {
      timeoutMs: REFUSAL_WITHIN_MS,
      describe: () => first.stderrTail(),
    });
    await pollUntil(async () => ((await first.call('GET', '/readyz')).status === 200 ? true : undefined), {
      timeoutMs: REFUSAL_WITHIN_MS,
      describe: () => 'readyz 200 again',
    });
    const holders = await h.sql`SELECT a.application_name FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
                                 WHERE l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND a.datname = current_database()`;
    assert.equal(holders.length, 1, 'one session holds the owner lock');
    assert.match(
      String(holders[0]?.application_name),
      new RegExp(`^transfer-${first.pid}-[0-9a-f]{6}@[^ ]+ owner lock$`),
      'the owner holds its lock again',
    );
    await fund(h, first, 41, 'own-lost-2');
    assert.is(first.exited(), null, first.stderrTail());
  });
});

/**
 * Starts `count` processes that each try to take DATA_DIR's lock at one instant. Each prints
 * OWNED or REFUSED, and an owner holds the lock until its stdin closes: answers the lines once all
 * have printed, with every owner still holding.
 */
async function raceForDataDir(dataDir: string, count: number): Promise<string[]> {
  const lockModule = pathToFileURL(path.join(PROJECT_ROOT, 'dist', 'src', 'ownership', 'data-dir-lock.js')).href;
  const at = Date.now() + 1_500;
  const script = `
    const { lockDataDir } = await import(${JSON.stringify(lockModule)});
    await new Promise((resolve) => setTimeout(resolve, ${at} - Date.now()));
    try {
      const lock = await lockDataDir(${JSON.stringify(dataDir)});
      process.stdout.write('OWNED\\n');
      process.stdin.resume();
      process.stdin.on('end', () => lock.release().then(() => process.exit(0)));
    } catch (error) {
      process.stdout.write((error.name === 'OwnershipError' ? 'REFUSED ' : 'ERROR ') + error.message + '\\n');
      process.exit(0);
    }`;
  const children: ChildProcess[] = [];
  try {
    const lines = await Promise.all(
      Array.from({ length: count }, () => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
        children.push(child);
        return new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout?.on('data', (chunk: Buffer) => {
            out += chunk.toString('utf8');
            if (out.includes('\n')) resolve(out.trim());
          });
          // 'close', not 'exit': a racer that prints REFUSED and exits at once can be seen to exit
          // before its line is read; 'close' comes once its stdout is drained.
          child.on('close', (code) => reject(new Error(`racer exited (${code}) before answering: ${out}`)));
        });
      }),
    );
    return lines;
  } finally {
    for (const child of children) child.stdin?.end();
    await Promise.all(
      children.map((child) => (child.exitCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve)))),
    );
  }
}

test('rule 7: of processes starting at once on one DATA_DIR, a stale lock in it from a SIGKILLed owner, exactly one owns it', async () => {
  const dead = spawn(process.execPath, ['-e', '']);
  const deadPid = dead.pid;
  await new Promise((resolve) => dead.once('exit', resolve));
  assert.ok(deadPid !== undefined);
  for (let round = 0; round < 4; round++) {
    const dataDir = await tempDir('transfer-own-race-');
    try {
      await fs.writeFile(
        path.join(dataDir, 'owner.lock'),
        `${JSON.stringify({ pid: deadPid, host: os.hostname(), startedAt: 'killed', procStart: '1' })}\n`,
      );
      const lines = await raceForDataDir(dataDir, 6);
      assert.is(lines.filter((l) => l === 'OWNED').length, 1, `round ${round}: ${lines.join(' | ')}`);
      assert.is(lines.filter((l) => l.startsWith('REFUSED DATA_DIR')).length, 5, lines.join(' | '));
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }
});

test('rule 7: an owner killed but not yet reaped by its parent (a zombie) does not block a restart', async () => {
  const dataDir = await tempDir('transfer-own-zombie-');
  const lockModule = pathToFileURL(path.join(PROJECT_ROOT, 'dist', 'src', 'ownership', 'data-dir-lock.js')).href;
  const owner = `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); await lockDataDir(${JSON.stringify(dataDir)}); process.kill(process.pid, 'SIGKILL');`;
  // The shell starts the owner, then becomes a sleep that never reaps it.
  const parent = spawn('sh', ['-c', `"${process.execPath}" --input-type=module -e "$OWNER" & exec sleep 60`], {
    env: { ...process.env, OWNER: owner },
    stdio: 'ignore',
  });
  try {
    const zombie = await pollUntil(
      async () => {
        const lock = await fs.readFile(path.join(dataDir, 'owner.lock'), 'utf8').catch(() => null);
        if (lock === null) return undefined;
        const pid = (JSON.parse(lock) as { pid: number }).pid;
        const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        if (!stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return undefined;
        // A killed process's main thread is a zombie before its other threads have exited, and
        // its files (the lock's socket) close with the last of them: a zombie is only that alone.
        const threads = await fs.readdir(`/proc/${pid}/task`).catch(() => []);
        return threads.length === 1 ? pid : undefined;
      },
      { timeoutMs: 15_000, describe: () => 'no zombie owner in the lock file' },
    );
    const lock = await lockDataDir(dataDir);
    assert.is(lock.owner.pid, process.pid);
    assert.ok(zombie !== process.pid);
    await lock.release();
  } finally {
    parent.kill('SIGKILL');
    await new Promise((resolve) => (parent.exitCode !== null || parent.signalCode !== null ? resolve(null) : parent.once('exit', resolve)));
    await fs.rm(dataDir, { recursive: true, force: true });
  }
});

test('rule 7: a DATA_DIR removed under its live owner does not refuse the new directories made after it', async () => {
  const removed = await tempDir('transfer-own-removed-');
  const gone = await fs.stat(removed, { bigint: true });
  const lockModule = pathToFileURL(path.join(PROJECT_ROOT, 'dist', 'src', 'ownership', 'data-dir-lock.js')).href;
  const owner = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { lockDataDir } = await import(${JSON.stringify(lockModule)}); await lockDataDir(${JSON.stringify(removed)}); console.log('LOCKED'); setInterval(() => undefined, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const made: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      owner.stdout.on('data', (c: Buffer) => (c.toString().includes('LOCKED') ? resolve() : undefined));
      owner.once('exit', (code) => reject(new Error(`the owner exited (${code}) before it held the lock`)));
    });
    await fs.rm(removed, { recursive: true, force: true });
    // ext4 gives a freed inode to the next directory made; the owner's open DATA_DIR keeps it taken.
    for (let i = 0; i < 5; i++) {
      const dir = await tempDir('transfer-own-removed-');
      made.push(dir);
      const st = await fs.stat(dir, { bigint: true });
      assert.not.equal([st.dev, st.ino], [gone.dev, gone.ino], 'a new directory got the removed DATA_DIR inode while its owner runs');
      const lock = await lockDataDir(dir);
      assert.is(lock.owner.pid, process.pid);
      await lock.release();
    }
  } finally {
    owner.kill('SIGKILL');
    await new Promise((resolve) => (owner.exitCode !== null || owner.signalCode !== null ? resolve(null) : owner.once('exit', resolve)));
    for (const dir of made) await fs.rm(dir, { recursive: true, force: true });
  }
});

test('ledger identity: every pair of ids and contents, decided', () => {
  const A = '11111111-1111-4111-8111-111111111111';
  const B = '22222222-2222-4222-8222-222222222222';
  const rows: Array<[{ id: string | null; used: boolean; spotLog?: boolean }, { id: string | null; used: boolean }, string]> = [
    [{ id: null, used: false }, { id: null, used: false }, 'new both'],
    [{ id: null, used: true }, { id: null, used: true }, 'new both'],
    [{ id: null, used: true }, { id: null, used: false }, 'refused'],
    [{ id: null, used: false }, { id: null, used: true }, 'refused'],
    [{ id: A, used: true }, { id: A, used: true }, 'ok'],
    [{ id: A, used: true }, { id: B, used: true }, 'refused'],
    [{ id: A, used: false }, { id: null, used: false }, 'stamp WAL'],
    [{ id: A, used: true }, { id: null, used: false }, 'refused'],
    [{ id: A, used: false }, { id: null, used: true }, 'refused'],
    [{ id: null, used: false }, { id: A, used: false }, 'stamp database'],
    [{ id: null, used: false }, { id: A, used: true }, 'refused'],
    [{ id: null, used: true }, { id: A, used: false }, 'refused'],
    // An empty WAL against a database holding the SPOT log (and SPOT_LOG on) is rebuilt from it.
    [{ id: A, used: true, spotLog: true }, { id: null, used: false }, 'rebuild'],
    [{ id: A, used: false, spotLog: true }, { id: null, used: false }, 'rebuild'],
    [{ id: A, used: true, spotLog: false }, { id: null, used: false }, 'refused'],
    [{ id: A, used: true, spotLog: true }, { id: null, used: true }, 'refused'],
  ];
  for (const [pg, wal, expected] of rows) {
    let got: string;
    try {
      const d = decide(pg, wal, '/data/ubscore');
      got =
        d.rebuild === true
          ? 'rebuild'
          : d.writePostgres && d.writeWal
            ? 'new both'
            : d.writeWal
              ? 'stamp WAL'
              : d.writePostgres
                ? 'stamp database'
                : 'ok';
    } catch (error) {
      assert.ok(error instanceof OwnershipError);
      got = 'refused';
    }
    assert.is(got, expected, `${JSON.stringify(pg)} / ${JSON.stringify(wal)}`);
  }
});

test('a fresh DATA_DIR against a database holding the SPOT log is rebuilt from PostgreSQL: the SPOT balance is there', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 42, 'own-rebuild-1');
    await first.stop();
    const freshDir = await tempDir('transfer-own-rebuild-');
    try {
      const next = await h.start({ DATA_DIR: freshDir });
      const r = await next.call('GET', '/api/v1/balances', { token: h.userToken(42) });
      const spot = (r.body.spot as { asset: string; available: string }[]).find((b) => b.asset === 'USDT');
      assert.is(spot?.available, '4.00000000', JSON.stringify(r.body));
      await fund(h, next, 42, 'own-rebuild-2');
      await next.stop();
    } finally {
      await fs.rm(freshDir, { recursive: true, force: true });
    }
  });
});

test('SPOT_LOG=off against a database that keeps the SPOT log is refused (its log would go stale)', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    await fund(h, first, 43, 'own-stale-1');
    await first.stop();
    const r = await refusedStart(h, { SPOT_LOG: 'off' });
    assert.is(r.code, REFUSED_EXIT_CODE, r.stderr);
    assert.match(r.stderr, /SPOT_LOG=off against a database that keeps the SPOT log in PostgreSQL/);
    const again = await h.start();
    await fund(h, again, 43, 'own-stale-2');
  });
});

test.run();
