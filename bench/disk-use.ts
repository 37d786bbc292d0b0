// Disk bytes per million committed transfers, by part of UBSCore's LMDB environment (the WAL,
// the processed set, snapshots), read once after the load levels from the service's GET
// /metrics (ubscore_lmdb_bytes, ubscore_lmdb_file_bytes) and PostgreSQL's count of COMMITTED
// transfers. What is measured is what stays on disk: WAL records a snapshot covers are pruned,
// and the count includes the seeding deposits' records, a small share of the total.

import type { BenchService } from './service-child.js';

export type DiskUse = {
  readonly committed: number;
  readonly bytes: DiskParts;
  /** `bytes` scaled to one million committed transfers; null parts when none committed. */
  readonly perMillionTransfers: DiskParts | null;
};
export type DiskParts = { readonly wal: number; readonly processed: number; readonly snapshot: number; readonly dataFile: number };

/** One gauge's value from Prometheus text, or null when the series is absent. */
function gauge(text: string, series: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${series} `)) continue;
    const value = Number(line.slice(series.length + 1));
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
    wal: read('ubscore_lmdb_bytes{db="wal"}'),
    processed: read('ubscore_lmdb_bytes{db="processed"}'),
    snapshot: read('ubscore_lmdb_bytes{db="snapshot"}'),
    dataFile: read('ubscore_lmdb_file_bytes'),
  };
  const scale = (x: number): number => Math.round((x / committed) * 1_000_000);
  const perMillionTransfers = committed > 0 ? { wal: scale(bytes.wal), processed: scale(bytes.processed), snapshot: scale(bytes.snapshot), dataFile: scale(bytes.dataFile) } : null;
  return { committed, bytes, perMillionTransfers };
}

export async function measureDiskUse(svc: BenchService): Promise<DiskUse> {
  const response = await fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  const text = await response.text();
  const rows = await svc.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state = 40`;
  return diskUseFrom(text, rows[0]?.n ?? 0);
}
