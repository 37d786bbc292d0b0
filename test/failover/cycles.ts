// One cycle of the failover drill, under load: the primary is killed (SIGKILL, its DATA_DIR deleted
// on alternate cycles) or paused past its lease (SIGSTOP, then SIGCONT); the standby must answer
// /readyz 200 within PROMOTION_MS_MAX; the former primary comes back as the new standby and must
// catch up (lag 0) before the next cycle. Every failure is a violation, never a crash.

import type { Sql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import type { Balancer, ClientErrors } from './lb.js';
import type { Load } from './load.js';
import type { DrillPg } from './pg.js';
import {
  endedWithin,
  type Ended,
  type Machine,
  type Role,
  type Running,
  sleep,
  waitCaughtUp,
  waitReady,
  wipeDataDir,
} from './processes.js';

/** The bound the issue sets on a promotion: from the kill (or the pause) to the standby's /readyz 200. */
export const PROMOTION_MS_MAX = 5_000;
/** How long the drill waits for a promotion after a SIGKILL before it calls it failed. */
const PROMOTION_WAIT_MS = 30_000;
/** After a SIGSTOP: the lease (LEASE_MS, 1.5 s here) plus the bound, with room to see how late it is. */
const PAUSED_PROMOTION_WAIT_MS = 10_000;
const CATCH_UP_WAIT_MS = 60_000;
/** How long a paused former owner may run after SIGCONT before it must have exited. */
const OLD_OWNER_EXIT_WAIT_MS = 5_000;

export type Pair = { primary: Running; standby: Running | null };

export type CycleContext = {
  readonly sql: Sql;
  readonly lb: Balancer;
  readonly violations: Violation[];
  readonly log: (line: string) => void;
  /** Starts a service on `machine`; rejects when it does not answer /healthz. */
  readonly start: (machine: Machine, role: Role) => Promise<Running>;
  readonly loadMsMin: number;
  readonly loadMsMax: number;
  /** The clients' load; a cycle may pause it to read balances that no transfer is moving. */
  readonly load: Load;
  readonly pg: DrillPg;
  readonly users: readonly bigint[];
  pair: Pair;
};

/** The kinds of cycle; `sigkill` and `sigstop` here, the PostgreSQL faults in pg-cycles.ts, `stale-primary` in stale-cycle.ts. */
export type CycleKind = 'sigkill' | 'sigstop' | 'pg-restart' | 'pg-pause' | 'stale-primary';

export type CycleReport = {
  readonly cycle: number;
  readonly kind: CycleKind;
  readonly primary: string;
  readonly loadMs: number;
  readonly dataDirDeleted: boolean;
  /** From the signal to the standby's /readyz 200; null when it never became ready. */
  promotionMs: number | null;
  /** From the restart of the former primary as standby to its lag 0; null when it did not get there. */
  catchUpMs: number | null;
  /** SIGSTOP cycle only: how the paused former owner ended after SIGCONT, what it answered and wrote after the promotion. */
  oldOwner?: { ended: Ended | null; answersAfterPromotion: number; writesAfterPromotion: number };
  /** What clients saw go wrong from the fault until an owner answered /readyz 200 again (or the wait for it ended); pg-restart: and from the kill after it. */
  clientErrors?: ClientErrors;
  /** A PostgreSQL fault's own numbers (pg-cycles.ts). */
  pgFault?: PgFault;
  /** The stale-primary cycle's own numbers (stale-cycle.ts). */
  stale?: StaleReport;
};

export type PgFault = {
  /** restart: from the stop until PostgreSQL answered again; pause: how long every process of it was stopped. */
  downMs: number | null;
  /** pause: the processes of the server stopped (the postmaster and its children). */
  processesStopped?: number;
  /** From PostgreSQL back until the primary answered /readyz 200; null when it did not within the bound (or the standby took over). */
  primaryReadyMs: number | null;
  /** restart: which process owned the ledger once PostgreSQL answered again (null: neither answered /readyz 200). */
  ownerAfter?: 'primary' | 'standby' | null;
  /** restart: the standby that waited through it still ran and followed (lag 0) afterwards. */
  standbyFollowed?: boolean;
  /** pause: from the SIGCONT until the primary answered a transfer COMMITTED; null when none came within the bound. */
  firstCommitMs?: number | null;
  /** How the primary (restart, pause) or the standby (restart) ended during the fault, when it did. */
  primaryEnded?: Ended | null;
  standbyEnded?: Ended | null;
};

export type StaleReport = {
  /** The old primary's local WAL ended at this seq when it was killed (read from its LMDB). */
  oldWalSeq: number | null;
  /** SPOT deposits (admin, account SPOT) the new owner answered 200. */
  spotDeposits: number;
  /** Clean stops and starts of the new owner until PostgreSQL's SPOT log was archived past oldWalSeq. */
  archiveRounds: number;
  archivedThroughSeq: number;
  /** spot_log rows left after the archive: 0 means the whole log is archived (only a snapshot and spot_processed hold it). */
  spotLogRows: number;
  snapshotSeqs: number[];
  /** From the start of the old primary on its old DATA_DIR until /readyz 200; null when it never answered 200. */
  readyMs: number | null;
  /** Balances (user, asset, side) it served other than what the new owner acknowledged before it stopped. */
  balancesDiffering: number | null;
};

/** SIGKILL the primary under load (and on `wipe`, lose its DATA_DIR), time the promotion, bring it back as standby. */
export async function killCycle(ctx: CycleContext, cycle: number, wipe: boolean): Promise<CycleReport> {
  const report = await underLoad(ctx, cycle, 'sigkill', wipe);
  const old = await killPrimary(ctx, report, wipe);
  if (old !== null) await bringBack(ctx, report, old.machine);
  return report;
}

/**
 * SIGKILL the primary (on `wipe`, its DATA_DIR lost too) and time the standby's promotion into
 * `report`; resolves the killed process once the standby owns the ledger, else null (a violation).
 */
export async function killPrimary(ctx: CycleContext, report: CycleReport, wipe: boolean): Promise<Running | null> {
  const { primary: old, standby } = ctx.pair;
  if (standby === null) throw new Error('a cycle needs a standby');
  const killedAt = Date.now();
  old.signal('SIGKILL');
  await old.exited;
  if (wipe) await wipeDataDir(old.machine);
  const readyAt = await waitReady(standby, PROMOTION_WAIT_MS);
  report.clientErrors = plus(report.clientErrors, ctx.lb.errorsBetween(killedAt, readyAt ?? Date.now()));
  if (!promoted(ctx, report, standby, readyAt === null ? null : readyAt - killedAt, PROMOTION_WAIT_MS)) return null;
  ctx.pair = { primary: standby, standby: null };
  return old;
}

/**
 * SIGSTOP the primary past its lease: the standby must take over; after SIGCONT the former owner
 * must have answered nothing and written nothing after the promotion, and exited non-zero.
 */
export async function stopCycle(ctx: CycleContext, cycle: number): Promise<CycleReport> {
  const { primary: old, standby } = ctx.pair;
  if (standby === null) throw new Error('a cycle needs a standby');
  const report = await underLoad(ctx, cycle, 'sigstop', false);
  const [before] = await ctx.sql<{ epoch: string }[]>`SELECT epoch::text FROM ledger_owner`;
  const stoppedAt = Date.now();
  old.signal('SIGSTOP');
  const readyAt = await waitReady(standby, PAUSED_PROMOTION_WAIT_MS);
  report.clientErrors = ctx.lb.errorsBetween(stoppedAt, readyAt ?? Date.now());
  const took = promoted(ctx, report, standby, readyAt === null ? null : readyAt - stoppedAt, PAUSED_PROMOTION_WAIT_MS, 'the owner lease');
  old.signal('SIGCONT');
  if (!took || readyAt === null) return report; // the paused owner resumes as the primary; the standby still waits
  ctx.pair = { primary: standby, standby: null };
  const ended = await oldOwnerEnds(ctx, old, `cycle ${cycle}: the former owner (pid ${old.instance.pid})`, 'SIGCONT');
  if (ended?.code === 0) {
    violate(ctx, 'old-owner-exit', `cycle ${cycle}: the former owner (pid ${old.instance.pid}) exited 0 after losing the lease`);
  }
  report.oldOwner = await afterPromotion(ctx, cycle, old, { epoch: before?.epoch ?? '0', readyAt, ended });
  await bringBack(ctx, report, old.machine);
  return report;
}

/**
 * Waits `waitMs` (OLD_OWNER_EXIT_WAIT_MS) for a superseded owner to end by itself; one still running then
 * is a violation, and is killed. Answers how it ended (null: it had to be killed).
 */
export async function oldOwnerEnds(
  ctx: CycleContext,
  old: Running,
  who: string,
  since: string,
  waitMs = OLD_OWNER_EXIT_WAIT_MS,
): Promise<Ended | null> {
  const ended = await endedWithin(old, waitMs);
  if (ended !== null) return ended;
  violate(ctx, 'old-owner-exit', `${who} still ran ${waitMs} ms after ${since}`);
  old.signal('SIGKILL');
  await old.exited;
  return null;
}

/** Lets the load run for a random time in [loadMsMin, loadMsMax] before the cycle's signal. */
export async function underLoad(ctx: CycleContext, cycle: number, kind: CycleReport['kind'], wipe: boolean): Promise<CycleReport> {
  const loadMs = Math.round(ctx.loadMsMin + Math.random() * (ctx.loadMsMax - ctx.loadMsMin));
  await sleep(loadMs);
  return { cycle, kind, primary: ctx.pair.primary.machine.name, loadMs, dataDirDeleted: wipe, promotionMs: null, catchUpMs: null };
}

/** Records the promotion time, or the violation when there was none or it took longer than PROMOTION_MS_MAX. */
export function promoted(
  ctx: CycleContext,
  report: CycleReport,
  standby: Running,
  ms: number | null,
  waitedMs: number,
  needs?: string,
): boolean {
  report.promotionMs = ms;
  const what = `cycle ${report.cycle} (${report.kind})`;
  if (ms === null) {
    const end = standby.ended();
    const state =
      end === null
        ? `it still answers /readyz 503${needs === undefined ? '' : ` (a takeover of a paused owner needs ${needs}, not in this build or not working)`}`
        : `it exited (code ${end.code}, signal ${end.signal}): ${standby.stderrTail().trim().slice(-1_500)}`;
    violate(ctx, 'promotion', `${what}: the standby on ${standby.machine.name} was not ready within ${waitedMs} ms; ${state}`);
    return false;
  }
  ctx.log(`${what}: promotion of ${standby.machine.name} in ${ms} ms`);
  if (ms > PROMOTION_MS_MAX) violate(ctx, 'promotion-time', `${what}: promotion took ${ms} ms, over ${PROMOTION_MS_MAX} ms`);
  return true;
}

/** The paused owner's answers received, and spot_log rows of its epoch written, after the promotion. */
async function afterPromotion(
  ctx: CycleContext,
  cycle: number,
  old: Running,
  seen: { epoch: string; readyAt: number; ended: Ended | null },
): Promise<NonNullable<CycleReport['oldOwner']>> {
  const [owner] = await ctx.sql<{ promoted_at: Date | null }[]>`SELECT promoted_at FROM ledger_owner`;
  const promotedAt = owner?.promoted_at?.getTime() ?? seen.readyAt;
  const answers = ctx.lb.answersAfter(old.instance.pid, promotedAt);
  if (answers.length > 0)
    violate(
      ctx,
      'old-owner-answered',
      `cycle ${cycle}: the former owner (pid ${old.instance.pid}) answered ${answers.length} requests after the promotion: ${answers
        .slice(0, 5)
        .map((a) => `${a.method} ${a.path} ${a.status} ${answerState(a.body)} at +${a.receivedAt - promotedAt} ms`)
        .join('; ')}`,
    );
  const [writes] = await ctx.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM spot_log WHERE epoch = ${seen.epoch}::bigint AND written_at > ${new Date(promotedAt)}`;
  const late = writes?.n ?? 0;
  if (late > 0)
    violate(ctx, 'old-owner-wrote', `cycle ${cycle}: ${late} spot_log rows of the former epoch ${seen.epoch} written after the promotion`);
  return { ended: seen.ended, answersAfterPromotion: answers.length, writesAfterPromotion: late };
}

/** The former primary's machine back as the new standby; the next cycle waits until it is caught up. */
export async function bringBack(ctx: CycleContext, report: CycleReport, machine: Machine): Promise<void> {
  const restartedAt = Date.now();
  let standby: Running;
  try {
    standby = await ctx.start(machine, 'standby');
  } catch (error) {
    violate(ctx, 'standby-start', `cycle ${report.cycle}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2_000));
    return;
  }
  ctx.pair.standby = standby;
  if (await waitCaughtUp(standby, CATCH_UP_WAIT_MS)) {
    report.catchUpMs = Date.now() - restartedAt;
    return;
  }
  const end = standby.ended();
  violate(
    ctx,
    'standby-catch-up',
    `cycle ${report.cycle}: the new standby on ${machine.name} ${end === null ? `was not at lag 0 within ${CATCH_UP_WAIT_MS} ms` : `exited (code ${end.code}): ${standby.stderrTail().slice(-1_500)}`}`,
  );
  if (end !== null) ctx.pair.standby = null;
}

/** Errors of two windows of one cycle together (a PostgreSQL fault, then the kill after it). */
function plus(a: ClientErrors | undefined, b: ClientErrors): ClientErrors {
  if (a === undefined) return b;
  return { status503: a.status503 + b.status503, status500: a.status500 + b.status500, noAnswer: a.noAnswer + b.noAnswer };
}

/** What an answer told its client: the transfer's state, or the error code. */
function answerState(body: unknown): string {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { state?: unknown; code?: unknown };
  return String(b.state ?? b.code ?? '');
}

export function violate(ctx: CycleContext, check: string, detail: string): void {
  ctx.violations.push({ check, detail });
  ctx.log(`VIOLATION ${check}: ${detail}`);
}
