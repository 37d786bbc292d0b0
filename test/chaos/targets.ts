// The chaos run's targets, judged from the faults' records:
//   - a service takeover (the owner killed, paused or cut off from PostgreSQL) is ready again within
//     TAKEOVER_READY_MS of the later of its heal and the lease passing (the standby may take over only
//     once the owner's lease has passed; a pause or a partition shorter than that may leave the owner
//     in place, and a longer one is measured from its heal);
//   - a PostgreSQL failover or switchover (a Patroni switchover, a SIGKILL of the leader) is ready
//     within PG_FAILOVER_READY_MS of its start (Patroni's ttl, then the pools' reconnect and the lease);
//   - a long run (at least LONG_RUN_S) makes at least FAULTS_MIN faults, PG_FAILOVERS_MIN of them
//     PostgreSQL failovers or switchovers. A shorter run reports its counts unjudged.

import { DRILL_LEASE_MS } from '../failover/processes.js';
import type { FaultRecord } from './nemesis.js';
import { FAILOVER_KINDS, TAKEOVER_KINDS } from './schedule.js';

export const TAKEOVER_READY_MS = 5_000;
export const PG_FAILOVER_READY_MS = 20_000;
export const LONG_RUN_S = 900;
export const FAULTS_MIN = 100;
export const PG_FAILOVERS_MIN = 5;

export type Target = {
  readonly name: string;
  /** null: not judged (a short run's counts). */
  readonly met: boolean | null;
  readonly detail: string;
};

export const isTakeover = (f: FaultRecord): boolean => f.role === 'svc-owner' && TAKEOVER_KINDS.includes(f.kind);
export const isPgFailover = (f: FaultRecord): boolean => FAILOVER_KINDS.includes(f.kind);

const applied = (faults: readonly FaultRecord[]) => faults.filter((f) => f.skipped === undefined && f.startedAt !== null);

/** From the later of the heal and the lease passing until ready; null: never ready. */
export function takeoverReadyMs(f: FaultRecord): number | null {
  if (f.readyAfterStartMs === null || f.startedAt === null || f.healedAt === null) return null;
  const readyAt = f.startedAt + f.readyAfterStartMs;
  return Math.max(0, readyAt - Math.max(f.healedAt, f.startedAt + DRILL_LEASE_MS));
}

export function judgeTargets(faults: readonly FaultRecord[], seconds: number): Target[] {
  const done = applied(faults);
  const takeovers = done.filter(isTakeover);
  const failovers = done.filter(isPgFailover);
  const slowTakeovers = takeovers.filter((f) => (takeoverReadyMs(f) ?? Infinity) > TAKEOVER_READY_MS);
  const slowFailovers = failovers.filter((f) => (f.readyAfterStartMs ?? Infinity) > PG_FAILOVER_READY_MS);
  const worst = (xs: readonly (number | null)[]) => (xs.length === 0 ? '-' : `${Math.max(...xs.map((x) => x ?? Infinity))} ms`);
  const long = seconds >= LONG_RUN_S;
  const list = (fs: readonly FaultRecord[]) => fs.map((f) => `#${f.n} ${f.kind}`).join(', ');
  return [
    {
      name: `service takeovers ready within ${TAKEOVER_READY_MS} ms of the lease passing (or of the heal, if later)`,
      met: slowTakeovers.length === 0,
      detail: `${takeovers.length} takeover faults, worst ${worst(takeovers.map(takeoverReadyMs))}${slowTakeovers.length === 0 ? '' : `; over: ${list(slowTakeovers)}`}`,
    },
    {
      name: `PostgreSQL failovers and switchovers ready within ${PG_FAILOVER_READY_MS} ms of their start`,
      met: slowFailovers.length === 0,
      detail: `${failovers.length} failovers and switchovers, worst ${worst(failovers.map((f) => f.readyAfterStartMs))}${slowFailovers.length === 0 ? '' : `; over: ${list(slowFailovers)}`}`,
    },
    {
      name: `at least ${FAULTS_MIN} faults (judged in runs of ${LONG_RUN_S} s or more)`,
      met: long ? done.length >= FAULTS_MIN : null,
      detail: `${done.length} faults applied`,
    },
    {
      name: `at least ${PG_FAILOVERS_MIN} PostgreSQL failovers or switchovers (judged in runs of ${LONG_RUN_S} s or more)`,
      met: long ? failovers.length >= PG_FAILOVERS_MIN : null,
      detail: `${failovers.length} applied`,
    },
  ];
}
