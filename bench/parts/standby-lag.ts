// The standby's lag under load: a ROLE=standby process started beside the bench
// service, on its PostgreSQL, with a DATA_DIR of its own (rebuilt from PostgreSQL as it starts),
// follows the service's spot_log while a load runs; its /readyz (503, JSON with lag_records,
// lag_ms and applied_seq) is polled every STANDBY_POLL_INTERVAL_MS. After the load, the time it
// takes to reach the service's last WAL seq is measured, and the standby is stopped before the
// service, so it never takes the ledger over; the owner epoch is read before and after to show
// it did not.

import fs from 'node:fs/promises';
import { CLOCK_TICKS_PER_SECOND } from '../meters/cpu-share.js';
import { metricValue } from '../meters/spot-log-wait.js';
import { startBenchStandby, type BenchService, type BenchStandby } from '../support/service-child.js';

/** How often the standby's /readyz is read while the load runs. */
const STANDBY_POLL_INTERVAL_MS = 150;
/** A poll with no answer in this long counts as failed. */
const STANDBY_POLL_TIMEOUT_MS = 2_000;
/** Before and after the load: how long the standby may take to reach the service's last seq. */
const CATCH_UP_MS_MAX = 60_000;
const CATCH_UP_POLL_MS = 50;

type Spread = { readonly p50: number; readonly p99: number; readonly max: number };

export type StandbyLagFigures = {
  /** From spawning the standby until it held the service's last seq (its rebuild from PostgreSQL included). */
  readonly startMs: number;
  /** /readyz answers read during the load, and polls that got none (or not a standby's). */
  readonly samples: number;
  readonly failedPolls: number;
  readonly lagRecords: Spread;
  readonly lagMs: Spread;
  /** After the load: from its end until the standby applied the service's last WAL seq. */
  readonly catchUpMs: number;
  readonly appliedSeq: number;
  readonly primarySeq: number;
  /** The standby process's CPU (every thread) over the load, in cores. */
  readonly standbyCores: number;
  /** ledger_owner's epoch before and after: equal unless someone took the ledger over. */
  readonly ownerEpochBefore: number;
  readonly ownerEpochAfter: number;
};

/** The part as the report holds it (report.ts's Part, which imports this file's figures). */
export type StandbyPart =
  | { readonly status: 'measured'; readonly figures: StandbyLagFigures }
  | { readonly status: 'failed'; readonly error: string };

type Reading = { readonly lagRecords: number; readonly lagMs: number; readonly appliedSeq: number };

function spread(xs: readonly number[]): Spread {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? 0 };
}

/** One /readyz of the standby, or null when it did not answer as a standby. */
async function readLag(standby: BenchStandby): Promise<Reading | null> {
  try {
    const r = await fetch(`${standby.base}/readyz`, { signal: AbortSignal.timeout(STANDBY_POLL_TIMEOUT_MS) });
    const body = (await r.json()) as { role?: unknown; lag_records?: unknown; lag_ms?: unknown; applied_seq?: unknown };
    if (r.status !== 503 || body.role !== 'standby') return null;
    const [lagRecords, lagMs, appliedSeq] = [body.lag_records, body.lag_ms, body.applied_seq].map(Number);
    if (![lagRecords, lagMs, appliedSeq].every((x) => Number.isFinite(x))) return null;
    return { lagRecords: lagRecords as number, lagMs: lagMs as number, appliedSeq: appliedSeq as number };
  } catch {
    return null;
  }
}

/** The service's last durable WAL seq, from its /metrics. */
async function primarySeq(svc: BenchService): Promise<number> {
  const text = await fetch(`${svc.base}/metrics`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
  const seq = metricValue(text, 'transfer_ubscore_wal_seq');
  if (seq === null) throw new Error('GET /metrics has no transfer_ubscore_wal_seq');
  return seq;
}

/** Waits until the standby applied `seq`; answers how long that took. */
async function caughtUp(standby: BenchStandby, seq: number): Promise<{ ms: number; appliedSeq: number }> {
  const started = Date.now();
  for (;;) {
    const r = await readLag(standby);
    if (r !== null && r.appliedSeq >= seq) return { ms: Date.now() - started, appliedSeq: r.appliedSeq };
    if (standby.exited()) throw new Error(`the standby exited before it reached seq ${seq}: ${standby.stderrTail()}`);
    if (Date.now() - started > CATCH_UP_MS_MAX)
      throw new Error(
        `the standby did not reach seq ${seq} within ${CATCH_UP_MS_MAX} ms (last /readyz: ${JSON.stringify(r)}): ${standby.stderrTail()}`,
      );
    await new Promise((resolve) => setTimeout(resolve, CATCH_UP_POLL_MS));
  }
}

async function processTicks(pid: number): Promise<number> {
  const text = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
}

async function ownerEpoch(svc: BenchService): Promise<number> {
  const rows = await svc.sql<{ epoch: string }[]>`SELECT epoch::text AS epoch FROM ledger_owner`;
  return Number(rows[0]?.epoch ?? -1);
}

/** Polls the standby until `stop`; answers every reading and how many polls failed. */
type Polled = { readonly readings: readonly Reading[]; readonly failed: number };

function pollLag(standby: BenchStandby): { stop: () => Promise<Polled> } {
  const readings: Reading[] = [];
  let failed = 0;
  let running = true;
  const loop = (async (): Promise<void> => {
    while (running) {
      const r = await readLag(standby);
      if (r === null) failed++;
      else readings.push(r);
      await new Promise((resolve) => setTimeout(resolve, STANDBY_POLL_INTERVAL_MS));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { readings, failed };
    },
  };
}

type Following = { readonly standby: BenchStandby; readonly startMs: number; readonly epochBefore: number };

/** Starts the standby and waits until it holds the service's seq of now (the service idle). */
async function startFollowing(svc: BenchService): Promise<Following> {
  const epochBefore = await ownerEpoch(svc);
  const seqBefore = await primarySeq(svc);
  const spawned = Date.now();
  const standby = await startBenchStandby(svc);
  try {
    await caughtUp(standby, seqBefore);
  } catch (error) {
    await standby.stop();
    throw error;
  }
  return { standby, startMs: Date.now() - spawned, epochBefore };
}

function failed(error: unknown): { readonly status: 'failed'; readonly error: string } {
  return { status: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
}

/** After the load: the spreads, the catch-up to the service's last seq, and the owner epoch again. */
async function figuresAfter(svc: BenchService, f: Following, polled: Polled, loadS: number, cpuTicks: number): Promise<StandbyLagFigures> {
  const seqAfter = await primarySeq(svc);
  const caught = await caughtUp(f.standby, seqAfter);
  return {
    startMs: f.startMs,
    samples: polled.readings.length,
    failedPolls: polled.failed,
    lagRecords: spread(polled.readings.map((r) => r.lagRecords)),
    lagMs: spread(polled.readings.map((r) => r.lagMs)),
    catchUpMs: caught.ms,
    appliedSeq: caught.appliedSeq,
    primarySeq: seqAfter,
    standbyCores: Math.round((cpuTicks / CLOCK_TICKS_PER_SECOND / Math.max(loadS, 0.001)) * 100) / 100,
    ownerEpochBefore: f.epochBefore,
    ownerEpochAfter: await ownerEpoch(svc),
  };
}

/**
 * Runs `load` with a standby following the service, and stops the standby before answering (so
 * before the service can stop). The load runs, and its result comes back, even when the standby
 * fails to start or to follow: that shows in the part. Call it with the service idle: the
 * standby's start is timed to the service's seq at that moment.
 */
export async function withStandby<T>(
  svc: BenchService,
  load: () => Promise<T>,
  log: (line: string) => void,
): Promise<{ load: T; standby: StandbyPart }> {
  let following: Following;
  try {
    following = await startFollowing(svc);
  } catch (error) {
    log(`standby failed to start: ${String(error)}`);
    return { load: await load(), standby: failed(error) };
  }
  const { standby } = following;
  try {
    const ticksBefore = await processTicks(standby.pid);
    const loadStarted = Date.now();
    const poller = pollLag(standby);
    const result = await load();
    const polled = await poller.stop();
    const loadS = (Date.now() - loadStarted) / 1000;
    const ticks = (await processTicks(standby.pid)) - ticksBefore;
    const figures = await figuresAfter(svc, following, polled, loadS, ticks).then(
      (x): StandbyPart => ({ status: 'measured', figures: x }),
      (error: unknown) => {
        log(`standby lag: ${String(error)}`);
        return failed(error);
      },
    );
    return { load: result, standby: figures };
  } finally {
    await standby.stop();
  }
}

/** The run's log line for the standby's figures. */
export function standbyLine(s: StandbyLagFigures): string {
  return (
    `  standby: started and caught up in ${s.startMs} ms; under load (${s.samples} readings, ${s.failedPolls} failed) lag ${s.lagRecords.p50} / ${s.lagRecords.p99} / ${s.lagRecords.max} records and ` +
    `${s.lagMs.p50} / ${s.lagMs.p99} / ${s.lagMs.max} ms (p50 / p99 / max), ${s.standbyCores} cores; caught up ${s.catchUpMs} ms after the load (seq ${s.appliedSeq} of ${s.primarySeq}); owner epoch ${s.ownerEpochBefore} → ${s.ownerEpochAfter}`
  );
}
