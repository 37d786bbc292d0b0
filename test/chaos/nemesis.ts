// The nemesis's loop: until the run's time is up, the next planned fault (schedule.ts) is applied
// and healed (faults.ts), then the service's time to ready is measured: from the heal (and from the
// fault's start) until a probe transfer, sent through the Balancer to an instance answering
// /readyz 200, is answered COMMITTED. The next fault waits for that, at most READY_WAIT_MS (the
// measurement goes on meanwhile), then the planned gap. After a PostgreSQL failover or switchover
// it waits for the measurement (SETTLED_WAIT_MS at most): writes resume only once the former
// leader is back as the synchronous standby, the very moment the next PostgreSQL fault's wait for
// a healthy cluster ends, and a CI run timed a kill of that standby as part of the failover. A
// fault on PostgreSQL or etcd first waits for Patroni to have a leader and a synchronous standby,
// so two faults never stack up into a cluster with no node left to lead. A fault whose time to
// ready is judged (targets.ts: a takeover, a PostgreSQL failover) first waits until the faults
// before it were measured ready, and a takeover also for both service processes to run, one of
// them a standby caught up with the owner that has followed it for STANDBY_SETTLE_MS, so neither
// is timed against the fault before.

import type { Balancer } from '../failover/lb.js';
import { sleep } from '../patroni/cluster.js';
import { type ClientCounts, sendUntilFinal } from './clients.js';
import { type Applied, applyFault, type Stage } from './faults.js';
import type { HistoryFile } from './history.js';
import { FAILOVER_KINDS, type Planned, TAKEOVER_KINDS } from './schedule.js';

const READY_WAIT_MS = 2_000;
/** A fault after which the service is not ready within this long is a violation (and the probe gives up). */
export const READY_MS_MAX = 120_000;
const HEALTHY_WAIT_MS = 60_000;
const SETTLED_WAIT_MS = 60_000;

export type FaultRecord = Omit<Planned, 'target'> & {
  /** The planned target, by role (schedule.ts). */
  readonly role: Planned['target'];
  /** The process or link it hit. */
  readonly target: string;
  readonly startedAt: number | null;
  readonly healedAt: number | null;
  readonly note?: string;
  /** The fault could not be made (no leader to switch over, ...): why. */
  readonly skipped?: string;
  /** From the heal until a probe transfer committed; null: not within READY_MS_MAX. */
  readyAfterHealMs: number | null;
  /** The same, from the fault's start. */
  readyAfterStartMs: number | null;
};

export type NemesisContext = {
  readonly stage: Stage;
  readonly lb: Balancer;
  readonly history: HistoryFile;
  readonly probeUser: bigint;
  readonly counts: ClientCounts;
  readonly log: (line: string) => void;
};

/** Runs faults from `next` until `until` (epoch ms); resolves every fault's record once each measurement ended. */
export async function runNemesis(ctx: NemesisContext, next: () => Planned, until: number): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  const measurements: Promise<void>[] = [];
  while (Date.now() < until) {
    const p = next();
    if (p.target !== 'svc-owner' && p.target !== 'svc-standby')
      await ctx.stage.cluster.waitHealthy(HEALTHY_WAIT_MS).catch(() => ctx.log(`fault ${p.n}: the cluster is not healthy; going on`));
    const takeover = TAKEOVER_KINDS.includes(p.kind) && p.target === 'svc-owner';
    if (takeover || FAILOVER_KINDS.includes(p.kind)) {
      // A timed fault starts from a ready service: the one before it has been measured ready.
      const ready = await Promise.race([Promise.all(measurements).then(() => true), sleep(SETTLED_WAIT_MS).then(() => false)]);
      if (!ready) ctx.log(`fault ${p.n}: the service is not ready after the faults before; going on`);
    }
    if (takeover && !(await ctx.stage.services.settled(SETTLED_WAIT_MS))) ctx.log(`fault ${p.n}: no standby follows the owner; going on`);
    const applied = await applyFault(p, ctx.stage).catch((error: unknown) => ({
      skipped: error instanceof Error ? error.message : String(error),
    }));
    if ('skipped' in applied) {
      ctx.log(`fault ${p.n} ${p.kind} ${p.target}: skipped (${applied.skipped.slice(0, 200)})`);
      records.push({
        ...p,
        role: p.target,
        startedAt: null,
        healedAt: null,
        skipped: applied.skipped,
        readyAfterHealMs: null,
        readyAfterStartMs: null,
      });
      await sleep(p.gapMs);
      continue;
    }
    const record: FaultRecord = { ...p, role: p.target, ...applied, readyAfterHealMs: null, readyAfterStartMs: null };
    records.push(record);
    const measured = measureReady(ctx, record, applied);
    measurements.push(measured);
    await Promise.race([measured, sleep(FAILOVER_KINDS.includes(p.kind) ? SETTLED_WAIT_MS : READY_WAIT_MS)]);
    ctx.log(describe(record));
    await sleep(p.gapMs);
  }
  await Promise.all(measurements);
  return records;
}

function describe(r: FaultRecord): string {
  const held = r.healedAt !== null && r.startedAt !== null ? r.healedAt - r.startedAt : 0;
  const ready =
    r.readyAfterHealMs === null ? `not ready within ${READY_WAIT_MS} ms (still measured)` : `ready ${r.readyAfterHealMs} ms after the heal`;
  return `fault ${r.n} ${r.kind} of ${r.target}: held ${held} ms${r.note === undefined ? '' : ` (${r.note})`}, ${ready}`;
}

/** Probes with transfers of `probeUser` (alternating directions, so they net out) until one commits. */
async function measureReady(ctx: NemesisContext, record: FaultRecord, applied: Applied): Promise<void> {
  const giveUpAt = applied.healedAt + READY_MS_MAX;
  for (let i = 0; Date.now() < giveUpAt; i++) {
    const key = `probe-${record.n}-${i}`;
    const from = (record.n + i) % 2 === 0 ? 'FUNDING' : 'SPOT';
    const body = { from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', asset: 'USDT', amount: '1', client_order_id: key };
    const a = await sendUntilFinal(ctx.lb, ctx.history, { op: 'transfer', key, user: ctx.probeUser, body }, ctx.counts, () => giveUpAt);
    if ((a?.body as { state?: string } | null)?.state === 'COMMITTED') {
      const at = a?.receivedAt ?? Date.now();
      record.readyAfterHealMs = Math.max(0, at - applied.healedAt);
      record.readyAfterStartMs = at - applied.startedAt;
      return;
    }
    await sleep(100);
  }
}
