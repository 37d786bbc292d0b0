// The failover drill's PostgreSQL faults, under load, on the drill's own server (pg.ts):
// - pg-restart: PostgreSQL is restarted (fast stop, start on the same directory and port) while
//   the standby waits. Once the server answers again, an owner must answer /readyz 200 within
//   OWNER_BACK_WAIT_MS: the primary (the standby then still runs and follows, lag 0; then the
//   primary is killed, SIGKILL, and the standby must take over within PROMOTION_MS_MAX, as in a
//   kill cycle), or the standby, which took the free owner lock first (a promotion, timed from
//   the server answering; the former primary must exit, and comes back as the standby).
// - pg-pause: with the standby stopped first (the primary is the sole process), every process of
//   PostgreSQL is paused (SIGSTOP) for PG_PAUSE_MS, then resumed. The primary must still run,
//   answer /readyz 200 within PAUSE_READY_WAIT_MS of the SIGCONT and answer a transfer COMMITTED;
//   clients may be answered 503 meanwhile (counted). The standby then comes back.
// A process that died is a violation, and is started again so the drill goes on.

import type { Sql } from '../../src/db/sql.js';
import {
  bringBack,
  type CycleContext,
  type CycleReport,
  killPrimary,
  oldOwnerEnds,
  type PgFault,
  promoted,
  underLoad,
  violate,
} from './cycles.js';
import { type Machine, readiness, type Running, sleep, stopService, waitCaughtUp, waitReady } from './processes.js';

/** How long PostgreSQL stays paused: longer than the lease (LEASE_MS 1.5 s) three times over. */
export const PG_PAUSE_MS = 5_000;
/** After the SIGCONT, the primary must answer /readyz 200 within this. */
const PAUSE_READY_WAIT_MS = 10_000;
/** After /readyz 200, a transfer must be answered COMMITTED by the primary within this. */
const COMMIT_WAIT_MS = 10_000;
/** How long the drill waits for its restarted PostgreSQL to answer a query. */
const PG_BACK_WAIT_MS = 30_000;
/** After PostgreSQL answers again, an owner (the primary, or the standby that took over) must answer /readyz 200 within this. */
const OWNER_BACK_WAIT_MS = 15_000;
/** A primary whose lock the standby took when PostgreSQL came back must have exited within this (it notices on its next retake, after its backoff). */
const TAKEN_OVER_EXIT_WAIT_MS = 10_000;
/** After PostgreSQL answers again, the waiting standby must be at lag 0 within this. */
const STANDBY_BACK_WAIT_MS = 30_000;
const STOP_WAIT_MS = 15_000;
const RESTART_WAIT_MS = 60_000;

/**
 * Restart PostgreSQL while the standby waits; then SIGKILL the primary and time the promotion. The
 * standby may take the ledger over when the server comes back (the owner lock is free until the
 * primary takes it again): that is a promotion too, timed from the server answering again.
 */
export async function pgRestartCycle(ctx: CycleContext, cycle: number): Promise<CycleReport> {
  const restart = ctx.pg.restart;
  if (restart === null) throw new Error('pg-restart needs the drill its own PostgreSQL (no DATABASE_URL)');
  const report = await underLoad(ctx, cycle, 'pg-restart', false);
  const { primary, standby } = ctx.pair;
  if (standby === null) throw new Error('a cycle needs a standby');
  const downAt = Date.now();
  await restart();
  const upAt = await pgAnswers(ctx.sql, PG_BACK_WAIT_MS);
  if (upAt === null) throw new Error(`cycle ${cycle}: the drill's PostgreSQL did not answer within ${PG_BACK_WAIT_MS} ms of its restart`);
  const owner = await waitOwner(primary, standby, OWNER_BACK_WAIT_MS);
  report.clientErrors = ctx.lb.errorsBetween(downAt, owner?.at ?? Date.now());
  const fault: PgFault = { downMs: upAt - downAt, ownerAfter: owner?.who ?? null, primaryReadyMs: null };
  report.pgFault = fault;
  ctx.log(`cycle ${cycle} (pg-restart): PostgreSQL answered again after ${upAt - downAt} ms; owner after it: ${owner?.who ?? 'none'}`);
  if (owner?.who === 'standby') {
    fault.standbyFollowed = true;
    await takenOverOnRestart(ctx, report, owner.at - upAt);
    return report;
  }
  if (owner === null) {
    violate(
      ctx,
      'pg-restart-owner',
      `cycle ${cycle}: neither process answered /readyz 200 within ${OWNER_BACK_WAIT_MS} ms of PostgreSQL answering again; the primary ${notReady(primary, OWNER_BACK_WAIT_MS)}`,
    );
    if (primary.ended() !== null) await restartPrimary(ctx, cycle, primary.machine);
  } else fault.primaryReadyMs = owner.at - upAt;
  fault.standbyFollowed = (await waitCaughtUp(standby, STANDBY_BACK_WAIT_MS)) && standby.ended() === null;
  fault.primaryEnded = primary.ended();
  fault.standbyEnded = standby.ended();
  if (!fault.standbyFollowed) {
    const seen = await readiness(standby.instance.base);
    const state =
      standby.ended() === null
        ? `was not a standby at lag 0 within ${STANDBY_BACK_WAIT_MS} ms (its /readyz: ${seen?.status ?? 'no answer'} ${JSON.stringify(seen?.body ?? null)})`
        : exitText(standby);
    violate(
      ctx,
      'pg-restart-standby',
      `cycle ${cycle}: the standby on ${standby.machine.name} waiting through a PostgreSQL restart ${state}`,
    );
    // No SIGKILL of the only owner: the standby comes back first, for the next cycles.
    await stopService(standby, STOP_WAIT_MS);
    ctx.pair.standby = null;
    if (ctx.pair.primary.ended() === null) await bringBack(ctx, report, standby.machine);
    return report;
  }
  if (ctx.pair.primary.ended() !== null) return report;
  const old = await killPrimary(ctx, report, false);
  if (old !== null) await bringBack(ctx, report, old.machine);
  else await afterFailedPromotion(ctx, report, primary.machine, standby);
  return report;
}

/**
 * The standby that waited through the restart did not take over (a violation already): it is
 * stopped, the killed primary started again, and the standby brought back, so the drill goes on
 * and its end checks still run.
 */
async function afterFailedPromotion(ctx: CycleContext, report: CycleReport, primaryMachine: Machine, standby: Running): Promise<void> {
  await stopService(standby, STOP_WAIT_MS);
  ctx.pair.standby = null;
  await restartPrimary(ctx, report.cycle, primaryMachine);
  if (ctx.pair.primary.ended() === null) await bringBack(ctx, report, standby.machine);
}

/** The standby took the ledger over as PostgreSQL came back: timed as a promotion; the former primary must end, then comes back as standby. */
async function takenOverOnRestart(ctx: CycleContext, report: CycleReport, promotionMs: number): Promise<void> {
  const { primary: old, standby } = ctx.pair;
  if (standby === null) return;
  promoted(ctx, report, standby, promotionMs, OWNER_BACK_WAIT_MS);
  ctx.pair = { primary: standby, standby: null };
  await oldOwnerEnds(
    ctx,
    old,
    `cycle ${report.cycle}: the former primary (pid ${old.instance.pid})`,
    'the standby took the ledger over',
    TAKEN_OVER_EXIT_WAIT_MS,
  );
  await bringBack(ctx, report, old.machine);
}

/** Which of the two first answers /readyz 200 (the owner), and when; null when neither does within `timeoutMs`. */
async function waitOwner(
  primary: Running,
  standby: Running,
  timeoutMs: number,
): Promise<{ who: 'primary' | 'standby'; at: number } | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (primary.ended() === null || standby.ended() === null)) {
    const [p, s] = await Promise.all([readiness(primary.instance.base), readiness(standby.instance.base)]);
    if (p?.status === 200) return { who: 'primary', at: Date.now() };
    if (s?.status === 200) return { who: 'standby', at: Date.now() };
    await sleep(20);
  }
  return null;
}

/** Pause every process of PostgreSQL for PG_PAUSE_MS with the primary alone; it must survive and serve. */
export async function pgPauseCycle(ctx: CycleContext, cycle: number): Promise<CycleReport> {
  const pause = ctx.pg.pause;
  if (pause === null) throw new Error('pg-pause needs the drill its own PostgreSQL (no DATABASE_URL)');
  const report = await underLoad(ctx, cycle, 'pg-pause', false);
  const { primary, standby } = ctx.pair;
  // The primary alone: nobody else may take the ledger over while PostgreSQL is paused.
  if (standby !== null) await stopService(standby, STOP_WAIT_MS);
  ctx.pair.standby = null;
  const faultAt = Date.now();
  let stopped: number[];
  let pausedAt: number;
  try {
    stopped = await pause();
    pausedAt = Date.now();
    await sleep(PG_PAUSE_MS);
  } finally {
    ctx.pg.resume();
  }
  const resumedAt = Date.now();
  const readyAt = await waitReady(primary, PAUSE_READY_WAIT_MS);
  const commitAt = readyAt === null ? null : await firstCommit(ctx, primary, resumedAt, COMMIT_WAIT_MS);
  report.clientErrors = ctx.lb.errorsBetween(faultAt, readyAt ?? Date.now());
  report.pgFault = {
    downMs: resumedAt - pausedAt,
    processesStopped: stopped.length,
    primaryReadyMs: readyAt === null ? null : readyAt - resumedAt,
    firstCommitMs: commitAt === null ? null : commitAt - resumedAt,
    primaryEnded: primary.ended(),
  };
  ctx.log(
    `cycle ${cycle} (pg-pause): ${stopped.length} PostgreSQL processes paused ${resumedAt - pausedAt} ms; primary ready ${readyAt === null ? 'never' : `${readyAt - resumedAt} ms`} after SIGCONT`,
  );
  judgePause(ctx, cycle, primary, readyAt, commitAt);
  if (primary.ended() !== null) await restartPrimary(ctx, cycle, primary.machine);
  if (standby !== null && ctx.pair.primary.ended() === null) await bringBack(ctx, report, standby.machine);
  return report;
}

function judgePause(ctx: CycleContext, cycle: number, primary: Running, readyAt: number | null, commitAt: number | null): void {
  const what = `cycle ${cycle} (pg-pause): the sole primary on ${primary.machine.name}`;
  if (primary.ended() !== null)
    violate(ctx, 'pg-pause-primary', `${what} did not survive a ${PG_PAUSE_MS} ms PostgreSQL pause: ${exitText(primary)}`);
  else if (readyAt === null) violate(ctx, 'pg-pause-ready', `${what} ${notReady(primary, PAUSE_READY_WAIT_MS)} of the SIGCONT`);
  else if (commitAt === null)
    violate(ctx, 'pg-pause-commit', `${what} answered no transfer COMMITTED within ${COMMIT_WAIT_MS} ms of /readyz 200`);
}

/** The time a query of the drill answered, or null when none did within `timeoutMs`. */
async function pgAnswers(sql: Sql, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await sql`SELECT 1`.then(
      () => true,
      () => false,
    );
    if (ok) return Date.now();
    await sleep(100);
  }
  return null;
}

/** When `svc` was first answered COMMITTED after `after` (epoch ms), or null within `timeoutMs`. */
async function firstCommit(ctx: CycleContext, svc: Running, after: number, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const commit = ctx.lb
      .answersAfter(svc.instance.pid, after)
      .find((a) => a.status === 200 && (a.body as { state?: unknown } | null)?.state === 'COMMITTED');
    if (commit !== undefined) return commit.receivedAt;
    if (svc.ended() !== null) return null;
    await sleep(50);
  }
  return null;
}

/** A primary that died in a PostgreSQL fault is started again on its DATA_DIR, so the drill goes on. */
export async function restartPrimary(ctx: CycleContext, cycle: number, machine: Machine): Promise<void> {
  try {
    const again = await ctx.start(machine, 'primary');
    ctx.pair.primary = again;
    if ((await waitReady(again, RESTART_WAIT_MS)) !== null) return;
    violate(ctx, 'primary-restart', `cycle ${cycle}: the primary started again on ${machine.name} ${notReady(again, RESTART_WAIT_MS)}`);
  } catch (error) {
    violate(ctx, 'primary-restart', `cycle ${cycle}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2_000));
  }
}

function notReady(svc: Running, waitedMs: number): string {
  return svc.ended() === null ? `did not answer /readyz 200 within ${waitedMs} ms` : exitText(svc);
}

function exitText(svc: Running): string {
  const end = svc.ended();
  return `exited (code ${end?.code ?? null}, signal ${end?.signal ?? null}): ${svc.stderrTail().trim().slice(-1_500)}`;
}
