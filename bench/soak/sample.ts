// One reading of everything the soak watches grow: the service's memory (/proc), UBSCore's LMDB
// file and directory on disk, the processed set's entries (GET /metrics), PostgreSQL's database
// size and committed transfers. Each reading is bounded in time and may come back null, since
// one falls in the restart, when neither the service nor its PostgreSQL answers.

import fs from 'node:fs/promises';
import path from 'node:path';
import { STATE_IDS } from '../../src/domain/fsm.js';
import { gauge } from '../meters/disk-use.js';
import { readStatus } from '../meters/memory.js';
import type { BenchService } from '../support/service-child.js';

/** A reading that takes longer than this is left null, so the schedule of samples holds. */
const READING_TIMEOUT_MS = 3_000;
const MIB = 1024 * 1024;

export type StoreReading = {
  readonly pid: number;
  /** VmRSS (what the issue judges) and RssAnon (the process's own heaps; VmRSS also counts LMDB's mapped pages) in MiB. */
  readonly vmRssMiB: number | null;
  readonly rssAnonMiB: number | null;
  /** DATA_DIR/ubscore/data.mdb: bytes on disk (st_blocks × 512) and its apparent size. */
  readonly dataMdbBytes: number | null;
  readonly dataMdbApparentBytes: number | null;
  /** Every file under DATA_DIR/ubscore, bytes on disk. */
  readonly ubscoreDirBytes: number | null;
  /** transfer_ubscore_processed_entries and transfer_ubscore_processed_filter_keys. */
  readonly processedEntries: number | null;
  readonly filterKeys: number | null;
  /** transfer_ubscore_processed_pruned_total (from 0 at each start) and transfer_processed_oldest_age_seconds. */
  readonly prunedTotal: number | null;
  readonly oldestAgeS: number | null;
  readonly pgDatabaseBytes: number | null;
  readonly committed: number | null;
};

/** Null instead of an error or a wait past READING_TIMEOUT_MS. */
async function bounded<T>(read: () => Promise<T | null>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), READING_TIMEOUT_MS);
  });
  try {
    return await Promise.race([read().catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function readStores(svc: BenchService): Promise<StoreReading> {
  const pid = svc.pid;
  const ubscoreDir = path.join(svc.dataDir, 'ubscore');
  const [status, dataMdb, dirBytes, metrics, pg] = await Promise.all([
    bounded(() => readStatus(pid)),
    bounded(() => fs.stat(path.join(ubscoreDir, 'data.mdb'))),
    bounded(() => bytesOnDisk(ubscoreDir)),
    bounded(() => fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(READING_TIMEOUT_MS) }).then((r) => (r.ok ? r.text() : null))),
    bounded(() => readPg(svc)),
  ]);
  const mib = (kib: number): number => Math.round((kib / 1024) * 10) / 10;
  return {
    pid,
    vmRssMiB: status === null ? null : mib(status.vmRssKiB),
    rssAnonMiB: status === null ? null : mib(status.anonKiB),
    dataMdbBytes: dataMdb === null ? null : dataMdb.blocks * 512,
    dataMdbApparentBytes: dataMdb?.size ?? null,
    ubscoreDirBytes: dirBytes,
    processedEntries: metrics === null ? null : gauge(metrics, 'transfer_ubscore_processed_entries'),
    filterKeys: metrics === null ? null : gauge(metrics, 'transfer_ubscore_processed_filter_keys'),
    prunedTotal: metrics === null ? null : gauge(metrics, 'transfer_ubscore_processed_pruned_total'),
    oldestAgeS: metrics === null ? null : gauge(metrics, 'transfer_processed_oldest_age_seconds'),
    pgDatabaseBytes: pg?.bytes ?? null,
    committed: pg?.committed ?? null,
  };
}

/** Bytes on disk of every file under `dir`, as `du` counts them (blocks, not apparent sizes). */
async function bytesOnDisk(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await bytesOnDisk(at);
    else if (entry.isFile()) total += (await fs.stat(at)).blocks * 512;
  }
  return total;
}

/** One statement: the database's size and the COMMITTED count (a scan of transfers_tb, a few ms per 100k rows). */
async function readPg(svc: BenchService): Promise<{ bytes: number; committed: number }> {
  const rows = await svc.sql<{ bytes: string; committed: number }[]>`
    SELECT pg_database_size(current_database())::text AS bytes,
           (SELECT count(*)::int FROM transfers_tb WHERE state = ${STATE_IDS.COMMITTED}) AS committed`;
  return { bytes: Number(rows[0]?.bytes ?? 0), committed: rows[0]?.committed ?? 0 };
}

export function toMiB(bytes: number | null): number | null {
  return bytes === null ? null : Math.round((bytes / MIB) * 10) / 10;
}
