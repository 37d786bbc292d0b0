// The failover drill's stale-primary cycle: an old primary started again on its old DATA_DIR after
// a newer owner ran, stopped and archived PostgreSQL's SPOT log past the old WAL's end. Machine A
// (the primary) is killed (SIGKILL, its DATA_DIR kept); B takes over (timed as in a kill cycle)
// and serves transfers and SPOT deposits under load until it has written a close snapshot's worth
// of records; the load is paused, every transfer finishes, and the balances B serves are read:
// what B acknowledged. B is stopped cleanly (SIGTERM: UBSCore's close snapshot, copied into
// spot_snapshots) and started again (its start archives spot_log through the oldest snapshot
// kept), and stopped again; while the archive has not passed A's WAL end, B serves another round
// of load first (at most ARCHIVE_ROUNDS_MAX). Then A starts on its old DATA_DIR as the primary.
// Judged: A answers /readyz 200 within STALE_READY_WAIT_MS and serves exactly the balances B
// acknowledged (the end checks then check them against the history); B comes back as standby.

import fs from 'node:fs/promises';
import path from 'node:path';
import { UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT } from '../../src/limits.js';
import { openWalDatabases } from '../../wal/log.js';
import { ASSETS, token, waitAllTerminal } from '../drill/drill.js';
import { bringBack, type CycleContext, type CycleReport, killPrimary, type StaleReport, underLoad, violate } from './cycles.js';
import { restartPrimary } from './pg-cycles.js';
import { type Machine, type Running, sleep, stopService, waitReady } from './processes.js';

/** Records B writes past a mark before a clean stop: more than UBSCore's close snapshot needs. */
const SNAPSHOT_TAIL_RECORDS = UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT + 200;
const LOAD_FOR_TAIL_WAIT_MS = 60_000;
const ARCHIVE_ROUNDS_MAX = 3;
/** How long B's start may take to archive spot_log past A's WAL end. */
const ARCHIVE_WAIT_MS = 10_000;
/** A clean stop: drain, UBSCore's close (its snapshot and the copy into PostgreSQL). */
const CLEAN_STOP_WAIT_MS = 30_000;
const START_READY_WAIT_MS = 60_000;
/** The old primary's start: a reconciliation, perhaps a rebuild from PostgreSQL. */
const STALE_READY_WAIT_MS = 60_000;
const DEPOSIT_AMOUNT = '7';
const DEPOSIT_ATTEMPTS_MAX = 20;

/** Every balance the drill's users hold, as served: `user asset SIDE` -> available. */
type Balances = Map<string, string>;

export async function stalePrimaryCycle(ctx: CycleContext, cycle: number): Promise<CycleReport> {
  const report = await underLoad(ctx, cycle, 'stale-primary', false);
  const faultAt = Date.now();
  const old = await killPrimary(ctx, report, false);
  if (old === null) return report;
  const stale: StaleReport = {
    oldWalSeq: await walLastSeq(old.machine),
    spotDeposits: 0,
    archiveRounds: 0,
    archivedThroughSeq: 0,
    spotLogRows: 0,
    snapshotSeqs: [],
    readyMs: null,
    balancesDiffering: null,
  };
  report.stale = stale;
  const newOwner = ctx.pair.primary;
  stale.spotDeposits = await spotDeposits(ctx, cycle, newOwner);
  await loadPast(ctx, (stale.oldWalSeq ?? 0) + SNAPSHOT_TAIL_RECORDS);
  const acknowledged = await archivePast(ctx, report, stale, newOwner.machine);
  if (acknowledged === null) {
    // The fault was not made (a violation): A comes back as the standby, for the next cycles.
    report.clientErrors = ctx.lb.errorsBetween(faultAt, Date.now());
    if (ctx.pair.primary.ended() === null) await bringBack(ctx, report, old.machine);
    return report;
  }
  const standbyMachine = await startStale(ctx, report, stale, { stale: old.machine, newOwner: newOwner.machine }, acknowledged);
  report.clientErrors = ctx.lb.errorsBetween(faultAt, Date.now());
  ctx.load.resume();
  if (ctx.pair.primary.ended() === null) await bringBack(ctx, report, standbyMachine);
  return report;
}

/**
 * Rounds of: pause the load, read what the owner acknowledged, stop it cleanly, start it again
 * (its start archives), until spot_log is archived past A's WAL end. Resolves the balances read
 * in the last round with nothing running, or null when the archive never got there (a violation;
 * the owner then serves on, the load resumed).
 */
async function archivePast(ctx: CycleContext, report: CycleReport, stale: StaleReport, machine: Machine): Promise<Balances | null> {
  const past = stale.oldWalSeq ?? 0;
  for (let round = 1; round <= ARCHIVE_ROUNDS_MAX; round++) {
    stale.archiveRounds = round;
    await ctx.load.pause();
    await waitAllTerminal(ctx.sql).catch((error: unknown) =>
      violate(ctx, 'terminal', `cycle ${report.cycle}: ${error instanceof Error ? error.message : String(error)}`),
    );
    const acknowledged = await readBalances(ctx, ctx.pair.primary);
    const unread = [...acknowledged].filter(([, value]) => value.startsWith('unreadable'));
    if (unread.length > 0)
      violate(ctx, 'stale-setup', `cycle ${report.cycle}: the new owner did not answer ${unread.length} balances: ${unread[0]?.join(' ')}`);
    if (!(await stopCleanly(ctx, report, ctx.pair.primary))) return null;
    const again = await ctx.start(machine, 'primary');
    ctx.pair = { primary: again, standby: null };
    if ((await waitReady(again, START_READY_WAIT_MS)) === null) {
      violate(
        ctx,
        'stale-setup',
        `cycle ${report.cycle}: the new owner on ${machine.name} did not start again: ${again.stderrTail().slice(-1_500)}`,
      );
      return null;
    }
    await waitArchived(ctx, stale, past);
    if (stale.archivedThroughSeq > past) return (await stopCleanly(ctx, report, again)) ? acknowledged : null;
    ctx.load.resume();
    await loadPast(ctx, Math.max(...stale.snapshotSeqs, past) + SNAPSHOT_TAIL_RECORDS);
  }
  violate(
    ctx,
    'stale-setup',
    `cycle ${report.cycle}: after ${ARCHIVE_ROUNDS_MAX} clean stops and starts of the new owner, spot_log is archived through seq ${stale.archivedThroughSeq} only, not past the old primary's WAL end ${past} (snapshots ${stale.snapshotSeqs.join(', ')}): the fault was not made`,
  );
  ctx.load.resume();
  return null;
}

/**
 * A starts on its old DATA_DIR as the primary; it must get ready and serve what B acknowledged.
 * Resolves the machine that comes back as the standby: B's, or A's when A failed and B was started
 * again as the primary so the drill goes on.
 */
async function startStale(
  ctx: CycleContext,
  report: CycleReport,
  stale: StaleReport,
  machines: { readonly stale: Machine; readonly newOwner: Machine },
  acknowledged: Balances,
): Promise<Machine> {
  const machine = machines.stale;
  const what = `cycle ${report.cycle} (stale-primary): the old primary on ${machine.name}, started on its old DATA_DIR (WAL end ${stale.oldWalSeq}, spot_log archived through ${stale.archivedThroughSeq})`;
  const startedAt = Date.now();
  let svc: Running;
  try {
    svc = await ctx.start(machine, 'primary');
  } catch (error) {
    violate(ctx, 'stale-primary-ready', `${what} did not start: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2_000));
    await restartPrimary(ctx, report.cycle, machines.newOwner);
    return machine;
  }
  ctx.pair = { primary: svc, standby: null };
  const readyAt = await waitReady(svc, STALE_READY_WAIT_MS);
  if (readyAt === null) {
    const end = svc.ended();
    const state =
      end === null ? `still answers /readyz 503 after ${STALE_READY_WAIT_MS} ms` : `exited (code ${end.code}, signal ${end.signal})`;
    violate(ctx, 'stale-primary-ready', `${what} ${state}: ${svc.stderrTail().trim().slice(-1_500)}`);
    await stopService(svc, CLEAN_STOP_WAIT_MS);
    await restartPrimary(ctx, report.cycle, machines.newOwner);
    return machine;
  }
  stale.readyMs = readyAt - startedAt;
  const served = await readBalances(ctx, svc);
  const differing = [...acknowledged]
    .filter(([key, value]) => served.get(key) !== value)
    .map(([key, value]) => `${key} ${served.get(key) ?? 'none'} (acknowledged ${value})`);
  stale.balancesDiffering = differing.length;
  ctx.log(
    `${what} ready in ${stale.readyMs} ms; ${differing.length} of ${acknowledged.size} balances differ from what the new owner acknowledged`,
  );
  if (differing.length > 0)
    violate(
      ctx,
      'stale-primary-balances',
      `${what} serves ${differing.length} balances other than the new owner acknowledged: ${differing.slice(0, 6).join('; ')}`,
    );
  return machines.newOwner;
}

/** One SPOT deposit per user through the new owner (`/admin/v1/deposit`, account SPOT); resolves how many were answered 200. */
async function spotDeposits(ctx: CycleContext, cycle: number, owner: Running): Promise<number> {
  let done = 0;
  for (const userId of ctx.users) {
    const body = { user_id: userId.toString(), account: 'SPOT', asset: ASSETS[0], amount: DEPOSIT_AMOUNT, ref: `stale-${cycle}-${userId}` };
    let status = 0;
    for (let attempt = 0; attempt < DEPOSIT_ATTEMPTS_MAX && status !== 200; attempt++) {
      status = await fetch(`${owner.instance.base}/admin/v1/deposit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token('admin')}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      }).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 200) await sleep(100);
    }
    if (status === 200) done++;
    else
      violate(ctx, 'stale-deposit', `cycle ${cycle}: the SPOT deposit ${body.ref} through the new owner was answered ${status}, not 200`);
  }
  return done;
}

/** Lets the load run (at most LOAD_FOR_TAIL_WAIT_MS) until PostgreSQL's SPOT log reaches `seq`. */
async function loadPast(ctx: CycleContext, seq: number): Promise<void> {
  const deadline = Date.now() + LOAD_FOR_TAIL_WAIT_MS;
  while (Date.now() < deadline) {
    const [row] = await ctx.sql<{ last: number | null }[]>`SELECT max(last_seq)::int AS last FROM spot_log`;
    if ((row?.last ?? 0) >= seq) return;
    await sleep(100);
  }
  ctx.log(`the SPOT log did not reach seq ${seq} within ${LOAD_FOR_TAIL_WAIT_MS} ms of load`);
}

/** Waits (at most ARCHIVE_WAIT_MS) for the archive at the owner's start to pass `seq`; records where it got. */
async function waitArchived(ctx: CycleContext, stale: StaleReport, seq: number): Promise<void> {
  const deadline = Date.now() + ARCHIVE_WAIT_MS;
  for (;;) {
    const [state] = await ctx.sql<{ through: number; rows: number }[]>`
      SELECT (SELECT archived_through_seq FROM spot_log_state)::int AS through, (SELECT count(*) FROM spot_log)::int AS rows`;
    const snapshots = await ctx.sql<{ seq: number }[]>`SELECT DISTINCT seq::int AS seq FROM spot_snapshots ORDER BY seq`;
    stale.archivedThroughSeq = state?.through ?? 0;
    stale.spotLogRows = state?.rows ?? 0;
    stale.snapshotSeqs = snapshots.map((s) => s.seq);
    if (stale.archivedThroughSeq > seq || Date.now() > deadline) return;
    await sleep(100);
  }
}

/** SIGTERM and a clean exit (0) within CLEAN_STOP_WAIT_MS; anything else is a violation. */
async function stopCleanly(ctx: CycleContext, report: CycleReport, svc: Running): Promise<boolean> {
  const { ended, killed } = await stopService(svc, CLEAN_STOP_WAIT_MS);
  if (!killed && ended.code === 0) return true;
  const how = killed ? `did not exit within ${CLEAN_STOP_WAIT_MS} ms of SIGTERM` : `exited with code ${ended.code}, signal ${ended.signal}`;
  violate(ctx, 'stale-setup', `cycle ${report.cycle}: the new owner on ${svc.machine.name} ${how}: ${svc.stderrTail().slice(-1_500)}`);
  await restartPrimary(ctx, report.cycle, svc.machine);
  ctx.load.resume();
  return false;
}

/**
 * Every user's FUNDING and SPOT balance of every asset as `svc` serves them (GET /api/v1/balances);
 * a user whose balances were not answered 200 gets `unreadable <status>` for each.
 */
async function readBalances(ctx: CycleContext, svc: Running): Promise<Balances> {
  const out: Balances = new Map();
  for (const userId of ctx.users) {
    const r = await fetch(`${svc.instance.base}/api/v1/balances`, {
      headers: { authorization: `Bearer ${token(userId)}` },
      signal: AbortSignal.timeout(5_000),
    }).catch(() => null);
    const body = r?.ok === true ? ((await r.json()) as Record<'funding' | 'spot', { asset: string; available: string }[]>) : null;
    for (const side of ['funding', 'spot'] as const)
      for (const asset of ASSETS) {
        const line =
          body === null ? `unreadable ${r?.status ?? 'no answer'}` : (body[side].find((b) => b.asset === asset)?.available ?? '0');
        out.set(`${userId} ${asset} ${side.toUpperCase()}`, line);
      }
  }
  return out;
}

/** The last seq of the machine's local SPOT WAL (its LMDB, read while nothing runs on it), or null when it holds none. */
async function walLastSeq(machine: Machine): Promise<number | null> {
  const dir = path.join(machine.dataDir, 'ubscore');
  // Opening an environment creates one: only a directory that holds one is opened.
  if (
    !(await fs.stat(path.join(dir, 'data.mdb')).then(
      () => true,
      () => false,
    ))
  )
    return null;
  const databases = openWalDatabases(dir);
  try {
    for (const key of databases.wal.getKeys({ reverse: true, limit: 1 })) return key;
    return null;
  } finally {
    await databases.env.close();
  }
}
