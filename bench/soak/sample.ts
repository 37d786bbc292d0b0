// One reading of everything the soak watches grow: the service's memory (/proc), UBSCore's LMDB
// file and directory on disk, the processed set's entries (GET /metrics), PostgreSQL's database
// size and committed transfers. Each reading is bounded in time and may come back null, since
// one falls in the restart, when neither the service nor its PostgreSQL answers.

import fs from 'node:fs/promises';
import path from 'node:path';
import { encodeTime } from 'ulid';
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

export async function readStores(svc: BenchService, committed: CommittedCount): Promise<StoreReading> {
  const pid = svc.pid;
  const ubscoreDir = path.join(svc.dataDir, 'ubscore');
  const [status, dataMdb, dirBytes, metrics, pg] = await Promise.all([
    bounded(() => readStatus(pid)),
    bounded(() => fs.stat(path.join(ubscoreDir, 'data.mdb'))),
    bounded(() => bytesOnDisk(ubscoreDir)),
    bounded(() => fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(READING_TIMEOUT_MS) }).then((r) => (r.ok ? r.text() : null))),
    bounded(() => readPg(svc, committed)),
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

async function readPg(svc: BenchService, committed: CommittedCount): Promise<{ bytes: number; committed: number } | null> {
  const [row] = await svc.sql<{ bytes: string }[]>`SELECT pg_database_size(current_database())::text AS bytes`;
  const count = await committed.read(svc);
  return row === undefined || count === null ? null : { bytes: Number(row.bytes), committed: count };
}

/** A transfer's req_id (a ULID, created as its request arrives) is older than this once it is in transfers_tb. */
const INSERTED_WITHIN_MS = 15_000;

/**
 * The COMMITTED transfers, counted without reading the whole history at each sample: a count of
 * transfers_tb by state is a scan of the table, which grows by about 250 MB per million transfers,
 * and one every 10 s was itself a load that grew through the run (p99 rose with it). Transfers
 * are read by their req_id (a ULID, ordered by the time it was made; the embedded cluster's
 * collation is C): those below `settledBelow` were all final when counted and were counted once,
 * so each reading counts only the newer ones. The bound moves up to the oldest unfinished transfer,
 * or to INSERTED_WITHIN_MS ago, whichever is older, so no transfer counted later can fall below it.
 */
export class CommittedCount {
  private settledBelow = '';
  private settled = 0;
  private busy = false;

  /** The count now, or null when a reading is still under way (a slow one the sample gave up on). */
  async read(svc: BenchService): Promise<number | null> {
    if (this.busy) return null;
    this.busy = true;
    try {
      const floor = `${encodeTime(Date.now() - INSERTED_WITHIN_MS, 10)}${'0'.repeat(16)}`;
      const counted = await svc.sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        // As the service's own metrics do: the planner must use req_id's index, never scan the table.
        await tx`SET LOCAL enable_seqscan = off`;
        const [oldest] = await tx<{ req_id: string | null }[]>`SELECT min(req_id) AS req_id FROM transfers_active`;
        const bound = oldest?.req_id != null && oldest.req_id < floor ? oldest.req_id : floor;
        const below = bound > this.settledBelow ? bound : this.settledBelow;
        const [settling] = await tx<{ n: number }[]>`
          SELECT count(*)::int AS n FROM transfers_tb
           WHERE req_id >= ${this.settledBelow} AND req_id < ${below} AND state = ${STATE_IDS.COMMITTED}`;
        const [newer] = await tx<{ n: number }[]>`
          SELECT count(*)::int AS n FROM transfers_tb WHERE req_id >= ${below} AND state = ${STATE_IDS.COMMITTED}`;
        return { below, settling: settling?.n ?? 0, newer: newer?.n ?? 0 };
      });
      this.settled += counted.settling;
      this.settledBelow = counted.below;
      return this.settled + counted.newer;
    } finally {
      this.busy = false;
    }
  }
}

export function toMiB(bytes: number | null): number | null {
  return bytes === null ? null : Math.round((bytes / MIB) * 10) / 10;
}
