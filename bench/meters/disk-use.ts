// Disk bytes per million committed transfers, by part of UBSCore's LMDB environment (the WAL,
// the processed set, snapshots), read once after the load levels from the service's GET
// /metrics (transfer_ubscore_lmdb_bytes, transfer_ubscore_lmdb_file_bytes) and PostgreSQL's count of COMMITTED
// transfers. What is measured is what stays on disk: WAL records a snapshot covers are pruned,
// and the count includes the seeding deposits' records, a small share of the total.

import type { BenchService } from '../support/service-child.js';
import { pgGrowth, readPg, type PgGrowth, type PgReading } from './pg-growth.js';

export type DiskUse = {
  readonly committed: number;
  readonly bytes: DiskParts;
  /** `bytes` scaled to one million committed transfers; null parts when none committed. */
  readonly perMillionTransfers: DiskParts | null;
  /** PostgreSQL's growth by table and index over the load levels (bench/meters/pg-growth.ts). */
  readonly postgres?: PgGrowth | null;
};
export type DiskParts = { readonly wal: number; readonly processed: number; readonly snapshot: number; readonly dataFile: number };

/**
 * One gauge's value from Prometheus text, or null when the series is absent. `series` is a name
 * with some of its labels (`name{db="wal"}`); the line may carry more (`thread`), in any order.
 */
export function gauge(text: string, series: string): number | null {
  const brace = series.indexOf('{');
  const name = brace < 0 ? series : series.slice(0, brace);
  const wanted = brace < 0 ? [] : series.slice(brace + 1, -1).split(',');
  for (const line of text.split('\n')) {
    const at = line.lastIndexOf(' ');
    const head = line.slice(0, at);
    if (head !== name && !head.startsWith(`${name}{`)) continue;
    const labels = head.length > name.length ? head.slice(name.length + 1, -1).split(',') : [];
    if (!wanted.every((w) => labels.includes(w))) continue;
    const value = Number(line.slice(at + 1));
    return Number.isFinite(value) ? value : null;
  }
  return null;
}

/** The disk figures from a /metrics text and a count of committed transfers; throws when a gauge is missing. */
export function diskUseFrom(metricsText: string, committed: number): DiskUse {
  const read = (series: string): number => {
    const value = gauge(metricsText, series);
    if (value === null) throw new Error(`GET /metrics has no ${series}`);
    return value;
  };
  const bytes: DiskParts = {
    wal: read('transfer_ubscore_lmdb_bytes{db="wal"}'),
    processed: read('transfer_ubscore_lmdb_bytes{db="processed"}'),
    snapshot: read('transfer_ubscore_lmdb_bytes{db="snapshot"}'),
    dataFile: read('transfer_ubscore_lmdb_file_bytes'),
  };
  const scale = (x: number): number => Math.round((x / committed) * 1_000_000);
  const perMillionTransfers =
    committed > 0
      ? { wal: scale(bytes.wal), processed: scale(bytes.processed), snapshot: scale(bytes.snapshot), dataFile: scale(bytes.dataFile) }
      : null;
  return { committed, bytes, perMillionTransfers };
}

/** UBSCore's parts from /metrics, and PostgreSQL's growth since `pgBefore` (read before the load levels). */
export async function measureDiskUse(svc: BenchService, pgBefore: PgReading): Promise<DiskUse> {
  const response = await fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  const text = await response.text();
  // One reading of PostgreSQL gives both the committed count and the relations' sizes.
  const pg = await readPg(svc.sql);
  return { ...diskUseFrom(text, pg.committed), postgres: pgGrowth(pgBefore, pg) };
}
