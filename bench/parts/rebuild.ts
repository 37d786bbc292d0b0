// (g) The SPOT ledger rebuilt from PostgreSQL alone (the target: "a start with an empty DATA_DIR
// rebuilds 1M accounts + 1M records from PostgreSQL in at most 30 s, and the rebuilt ledger passes
// the conservation check"). In a fresh database of the bench's PostgreSQL, the ledger of
// rebuild-ledger.ts is loaded (not timed); then, from an empty DATA_DIR, the start's own path is
// timed: the ledger identity check and the SPOT log's reconciliation (which rebuilds UBSCore's
// LMDB: src/ubscore/spot-log/reconcile.ts, rebuild.ts), then UBSCore's open of the result (the real
// worker: the snapshot loaded, the log after it replayed). The rebuilt ledger then answers the
// service's own conservation check (src/invariant/checker.ts) against the FUNDING side's rows,
// and op_seqs for a spread of keys, archived ones included, each at its own seq.
// Run alone: node dist/bench/parts/rebuild.js [accounts] [records] [records per block]

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startUbsCore, UbsClient, type UbsCoreHandle } from '../../actors/ubscore/client.js';
import { migrate } from '../../src/db/migrations.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { runConservationCheck } from '../../src/invariant/checker.js';
import { createLogger } from '../../src/log.js';
import { checkLedgerIdentity } from '../../src/ubscore/spot-log/ledger-identity.js';
import { reconcileSpotLog } from '../../src/ubscore/spot-log/reconcile.js';
import { SpotLogStore } from '../../src/ubscore/spot-log/store.js';
import { registerCleanup } from '../support/cleanup.js';
import { pgUrl, startBenchService } from '../support/service-child.js';
import {
  loadLedger,
  REBUILD_ACCOUNTS,
  REBUILD_BLOCK_RECORDS_DEFAULT,
  REBUILD_EPOCH,
  REBUILD_MS_MAX,
  REBUILD_RECORDS,
  sampleKeys,
  type LedgerShape,
} from './rebuild-ledger.js';

const REBUILD_DATABASE = 'bench_rebuild';
/** The service's default UBS_BATCH_MAX. */
const REBUILD_UBS_BATCH_MAX = 4_096;
/** An answer of UBSCore later than this is a failed run, not a slow one. */
const REBUILD_CALL_TIMEOUT_MS = 60_000;
/** Keys whose seq UBSCore is asked after the check: a spread over the whole log. */
const SAMPLED_KEYS = 1_000;

/** Where (g) makes its database: a connection that may create one, and the URL of a database by name. */
export type RebuildServer = { readonly admin: Sql; readonly urlOf: (database: string) => string };

export type RebuildFigures = {
  readonly accounts: number;
  /** Records in spot_log after the snapshot (the ledger's opening records are archived). */
  readonly records: number;
  readonly blockRecords: number;
  readonly blocks: number;
  readonly archivedEntries: number;
  readonly snapshotSeq: number;
  readonly lastSeq: number;
  /** The ledger identity check and the reconciliation that rebuilt the LMDB from PostgreSQL. */
  readonly rebuildMs: number;
  /** UBSCore's start on the rebuilt directory, of which its snapshot load and replay. */
  readonly openMs: number;
  readonly snapshotLoadMs: number;
  readonly replayMs: number;
  readonly totalMs: number;
  readonly withinMsMax: boolean;
  readonly conservation: { readonly differences: number; readonly accountsChecked: number; readonly ms: number };
  /** Keys UBSCore answered at their own seq, of those sampled. */
  readonly keysChecked: number;
  /** Loading the database, not timed as the rebuild: information. */
  readonly loadMs: number;
};

/** (g) at `shape` on `server`: loads its database, times the rebuild and open, checks the result, drops it all. */
export async function benchRebuild(server: RebuildServer, shape: LedgerShape, log: (line: string) => void): Promise<RebuildFigures> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-rebuild-'));
  let sql: Sql | null = null;
  let core: UbsCoreHandle | null = null;
  let client: UbsClient | null = null;
  const cleanup = registerCleanup(async () => {
    client?.close();
    if (core !== null) {
      await core.control.close().catch(() => undefined);
      await core.worker.terminate();
    }
    await sql?.end({ timeout: 5 });
    await server.admin.unsafe(`DROP DATABASE IF EXISTS ${REBUILD_DATABASE} WITH (FORCE)`).catch(() => undefined);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  try {
    await server.admin.unsafe(`DROP DATABASE IF EXISTS ${REBUILD_DATABASE} WITH (FORCE)`);
    await server.admin.unsafe(`CREATE DATABASE ${REBUILD_DATABASE}`);
    sql = openSql(server.urlOf(REBUILD_DATABASE), { max: 2, application: 'bench-rebuild' });
    await migrate(sql);
    log(`  (g) loading ${shape.accounts} accounts + ${shape.records} records in blocks of ${shape.blockRecords}…`);
    const loaded = await loadLedger(sql, shape);
    log(`  (g) loaded in ${loaded.loadMs} ms: ${loaded.blocks} blocks, ${loaded.archivedEntries} archived entries; rebuilding…`);
    const walDir = path.join(dataDir, 'ubscore');
    const started = performance.now();
    const rebuilt = await rebuild(sql, walDir);
    const rebuiltAt = performance.now();
    core = await startUbsCore({ walDir, batchMax: REBUILD_UBS_BATCH_MAX });
    const openedAt = performance.now();
    client = new UbsClient(core.connect());
    const stats = await core.control.stats();
    if (rebuilt.lastSeq !== loaded.lastSeq || stats.walSeq !== loaded.lastSeq || stats.accounts !== shape.accounts)
      throw new Error(
        `(g) rebuilt to seq ${rebuilt.lastSeq}, UBSCore at seq ${stats.walSeq} with ${stats.accounts} accounts: ${JSON.stringify(loaded)}`,
      );
    const conservation = await conserved(sql, client);
    const keysChecked = await checkKeys(client, shape);
    const rebuildMs = Math.round(rebuiltAt - started);
    const openMs = Math.round(openedAt - rebuiltAt);
    const totalMs = rebuildMs + openMs;
    return {
      ...shape,
      blocks: loaded.blocks,
      archivedEntries: loaded.archivedEntries,
      snapshotSeq: loaded.snapshotSeq,
      lastSeq: loaded.lastSeq,
      rebuildMs,
      openMs,
      snapshotLoadMs: Math.round(core.ready.snapshotLoadMs),
      replayMs: Math.round(core.ready.replayMs),
      totalMs,
      withinMsMax: totalMs <= REBUILD_MS_MAX,
      conservation,
      keysChecked,
      loadMs: loaded.loadMs,
    };
  } finally {
    await cleanup();
  }
}

/** What a start does with an empty DATA_DIR: the ledger identity check, then the reconciliation, which rebuilds. */
async function rebuild(sql: Sql, walDir: string): Promise<{ lastSeq: number }> {
  const log = createLogger({ level: 'warn', name: 'bench-rebuild', write: (line) => process.stderr.write(line) });
  await checkLedgerIdentity(sql, walDir, true);
  const outcome = await reconcileSpotLog({ sql, store: new SpotLogStore(sql), walDir, role: 'primary', epoch: REBUILD_EPOCH, log });
  if (outcome.kind !== 'rebuilt') throw new Error(`(g) the start did not rebuild: ${JSON.stringify(outcome)}`);
  return outcome;
}

/** The service's conservation check, UBSCore answering its reads. */
async function conserved(sql: Sql, client: UbsClient): Promise<RebuildFigures['conservation']> {
  const started = performance.now();
  const report = await runConservationCheck(sql, (command, timeoutMs) => client.send(command, timeoutMs));
  return { differences: report.differences.length, accountsChecked: report.accounts, ms: Math.round(performance.now() - started) };
}

/** Asks UBSCore at which seq it applied a spread of keys; every one must be its record's seq. */
async function checkKeys(client: UbsClient, shape: LedgerShape): Promise<number> {
  const sample = sampleKeys(shape, SAMPLED_KEYS);
  const answer = await client.send({ kind: 'op_seqs', keys: sample.map(({ op, key }) => ({ op, key })) }, REBUILD_CALL_TIMEOUT_MS);
  if (answer?.kind !== 'op_seqs') throw new Error(`(g) op_seqs: ${JSON.stringify(answer)}`);
  const wrong = sample.filter((s, i) => answer.seqs[i] !== s.seq);
  if (wrong.length > 0)
    throw new Error(`(g) ${wrong.length} of ${sample.length} keys not at their seq after the rebuild, first ${JSON.stringify(wrong[0])}`);
  return sample.length;
}

/** One line for the log. */
export function rebuildLine(f: RebuildFigures): string {
  return (
    `  (g) rebuild from PostgreSQL: ${f.totalMs} ms (rebuild ${f.rebuildMs} ms, UBSCore open ${f.openMs} ms: snapshot ${f.snapshotLoadMs}, replay ${f.replayMs}); ` +
    `${f.accounts} accounts, ${f.records} records in ${f.blocks} blocks, ${f.archivedEntries} archived entries; ` +
    `conservation ${f.conservation.differences} differences over ${f.conservation.accountsChecked} accounts (${f.conservation.ms} ms); ` +
    `${f.withinMsMax ? 'within' : 'OVER'} ${REBUILD_MS_MAX} ms`
  );
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const shape = {
    accounts: Number(process.argv[2] ?? REBUILD_ACCOUNTS),
    records: Number(process.argv[3] ?? REBUILD_RECORDS),
    blockRecords: Number(process.argv[4] ?? REBUILD_BLOCK_RECORDS_DEFAULT),
  };
  const main = async (): Promise<void> => {
    const svc = await startBenchService({});
    try {
      const server = { admin: svc.sql, urlOf: (database: string) => pgUrl(svc.pgPort, svc.pgPassword, { database }) };
      const figures = await benchRebuild(server, shape, (line) => process.stderr.write(`${line}\n`));
      process.stderr.write(`${rebuildLine(figures)}\n`);
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } finally {
      await svc.stop();
    }
  };
  main().catch((e: unknown) => {
    process.stderr.write(`rebuild bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
