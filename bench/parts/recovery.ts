// Start-up recovery time (spec 004 §5: under 15 s for 100,000 stuck transfers). Builds a data
// directory holding STUCK_TRANSFERS transfers left in INIT by a crash (funded users, real rows),
// starts the real service on it, and measures the time until every transfer is final. Stops at
// RECOVERY_BENCH_DEADLINE_S and then reports the rate and the projected total.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ulid } from 'ulid';
import { EVENT_CODES, STATE_IDS } from '../../src/domain/fsm.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { freePort } from '../../test/support/ports.js';
import { CLOCK_TICKS_PER_SECOND, machineTicks } from '../meters/cpu-share.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const USERS = 1_000;
const INSERT_CHUNK = 5_000;

export type RecoveryReport = {
  readonly stuck: number;
  readonly finished: number;
  readonly startupMs: number;
  readonly recoveryMs: number;
  readonly transfersPerSecond: number;
  readonly projectedMs: number;
  readonly completed: boolean;
  /** CPU seconds the whole machine spent from the restart to the end (service, PostgreSQL, bench); null without /proc/stat. */
  readonly machineCpuSeconds: number | null;
};

export async function benchRecovery(stuck: number, deadlineMs: number): Promise<RecoveryReport> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-recovery-'));
  await fs.chmod(dataDir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_PG_PORT: String(pgPort),
    PRINT_BANNER: '0',
    STALE_THRESHOLD_MS: '0',
  };
  delete (env as Record<string, string | undefined>).DATABASE_URL;
  let child = await startService(env, port);
  const password = (await fs.readFile(path.join(dataDir, 'postgres', 'pg-password'), 'utf8')).trim();
  const sql = openSql(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/transfer`, { max: 2, application: 'bench' });
  try {
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    await seedStuck(sql, stuck);
    // A database that held 100,000 stuck transfers had been vacuumed and analysed by
    // autovacuum as they accumulated; without this, that work lands inside the measurement.
    await sql`VACUUM ANALYZE`;
    // Dirty pages left by the seeding (and by earlier bench phases) are flushed first, so the
    // disk's write-back of other work is not timed as recovery.
    spawnSync('sync');
    const started = Date.now();
    const ticksBefore = await machineTicks();
    child = await startService(env, port);
    const startupMs = Date.now() - started;
    let finished = 0;
    while (Date.now() - started < deadlineMs) {
      // The service's own list of unfinished transfers is cheap to poll; once it is empty the
      // states themselves are counted, so the finish is never taken on the service's word.
      const listed = Number((await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_active`)[0]?.n);
      const open =
        listed > 0
          ? listed
          : Number((await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN (40, -10, -30)`)[0]?.n);
      finished = stuck - open;
      if (open === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const recoveryMs = Date.now() - started;
    const ticksAfter = await machineTicks();
    // machineTicks answers 0 where /proc/stat is missing.
    const machineCpuSeconds = ticksAfter === 0 ? null : Math.round(((ticksAfter - ticksBefore) / CLOCK_TICKS_PER_SECOND) * 10) / 10;
    const rate = finished / Math.max(0.001, (recoveryMs - startupMs) / 1000);
    return {
      stuck,
      finished,
      startupMs,
      recoveryMs,
      transfersPerSecond: Math.round(rate),
      projectedMs: finished === stuck ? recoveryMs : Math.round(startupMs + (stuck / Math.max(rate, 1)) * 1000),
      completed: finished === stuck,
      machineCpuSeconds,
    };
  } finally {
    await sql.end({ timeout: 5 });
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

/** Funded users and `stuck` transfers in INIT, half each direction, as a crash leaves them. */
async function seedStuck(sql: Sql, stuck: number): Promise<void> {
  const users = Array.from({ length: USERS }, (_, i) => BigInt(10_000 + i));
  // Lists travel as one comma-joined text parameter: postgres.js's sql.array() can stall as the
  // first query on a fresh connection (porsager/postgres#789).
  await sql`INSERT INTO funding_balances (user_id, asset, available)
            SELECT u::bigint, 'USDT', ${10n ** 15n} FROM unnest(string_to_array(${users.join(',')}, ',')) AS u`;
  for (let done = 0; done < stuck; done += INSERT_CHUNK) {
    const n = Math.min(INSERT_CHUNK, stuck - done);
    const ids = Array.from({ length: n }, () => ulid());
    const owners = ids.map((_, i) => String(users[(done + i) % USERS]));
    // FUNDING → SPOT only: SPOT starts empty, and every transfer must be able to commit.
    await sql`
      INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
      SELECT r, u::bigint, 'USDT', 100000000, 1, 1, 2, 0 FROM unnest(string_to_array(${ids.join(',')}, ','), string_to_array(${owners.join(',')}, ',')) AS x(r, u)`;
    await sql`INSERT INTO transfer_state_history (transfer_id, from_state, to_state, event)
              SELECT transfer_id, NULL, ${STATE_IDS.INIT}::smallint, ${EVENT_CODES.CREATED}::smallint FROM transfers_tb WHERE req_id = ANY(string_to_array(${ids.join(',')}, ','))`;
    await sql`INSERT INTO transfers_active (req_id, user_id) SELECT req_id, user_id FROM transfers_tb WHERE req_id = ANY(string_to_array(${ids.join(',')}, ','))`;
  }
}

async function startService(env: NodeJS.ProcessEnv, port: number) {
  // SERVICE_NODE_ARGS passes flags such as --cpu-prof to the service (NODE_OPTIONS refuses them).
  const nodeArgs = (process.env.SERVICE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'actors', 'main.js')], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const stuck = Number(process.env.STUCK_TRANSFERS ?? 100_000);
  const deadline = Number(process.env.RECOVERY_BENCH_DEADLINE_S ?? 60) * 1000;
  benchRecovery(stuck, deadline).then(
    (r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`),
    (e: unknown) => {
      process.stderr.write(`recovery bench failed: ${String(e)}\n`);
      process.exit(1);
    },
  );
}
