// The nemesis's schedule: from a seed, the n-th fault's kind, its target (named by role, resolved
// when it runs: the PostgreSQL leader, the service process that owns the ledger, ...), how long it
// holds and the pause after it. The same seed gives the same schedule, so a failing run replays
// with CHAOS_SEED. At least one fault in every FORCED_EVERY is a Patroni switchover or a SIGKILL of
// the PostgreSQL leader.

import { seededRandom } from '../support/random.js';

export type FaultKind = 'kill' | 'pause' | 'pg-restart' | 'switchover' | 'kill-leader' | 'partition' | 'slow';
export type Target = 'etcd' | 'pg-leader' | 'pg-replica' | 'svc-owner' | 'svc-standby';

/** The kinds that, aimed at the service's owner, make a takeover (judged in targets.ts). */
export const TAKEOVER_KINDS: readonly FaultKind[] = ['kill', 'pause', 'partition'];

export type Planned = {
  readonly n: number;
  readonly kind: FaultKind;
  readonly target: Target;
  /** How long the fault holds before its heal (a pause, a partition, a slow link; a kill's wait before the restart). */
  readonly holdMs: number;
  /** A slow link's added delay per chunk. */
  readonly delayMs: number;
  /** The pause after the service is ready again (or after READY_WAIT_MS), before the next fault. */
  readonly gapMs: number;
};

/** Each (kind, target) and its weight: switchover and leader kill together about 1 in 10. */
const MENU: readonly (readonly [FaultKind, Target, number])[] = [
  ['kill', 'svc-owner', 3],
  ['kill', 'svc-standby', 1.5],
  ['pause', 'svc-owner', 2],
  ['pause', 'svc-standby', 1],
  ['kill', 'etcd', 0.7],
  ['pause', 'etcd', 0.7],
  ['kill', 'pg-replica', 1],
  ['pause', 'pg-leader', 1],
  ['pause', 'pg-replica', 0.7],
  ['kill-leader', 'pg-leader', 1.2],
  ['switchover', 'pg-leader', 1.2],
  ['pg-restart', 'pg-leader', 1],
  ['pg-restart', 'pg-replica', 0.5],
  ['partition', 'svc-owner', 2.5],
  ['partition', 'svc-standby', 1],
  ['slow', 'svc-owner', 1.5],
  ['slow', 'svc-standby', 0.5],
];

const KILL_LEADER = ['kill-leader', 'pg-leader', 0] as const;
const SWITCHOVER = ['switchover', 'pg-leader', 0] as const;

/** No run of this many faults goes without a switchover or a leader kill. */
export const FORCED_EVERY = 15;

/** PostgreSQL's own failovers: the schedule forces one every FORCED_EVERY faults (judged in targets.ts). */
export const FAILOVER_KINDS: readonly FaultKind[] = ['switchover', 'kill-leader'];

/** The schedule of `seed`: call `next()` for each fault in turn. */
export function schedule(seed: number): { next: () => Planned } {
  const r = seededRandom(seed);
  let n = 0;
  let sinceFailover = 0;
  return {
    next: () => {
      n++;
      let pick = pickWeighted(r());
      if (sinceFailover >= FORCED_EVERY - 1 && !FAILOVER_KINDS.includes(pick[0])) pick = r() < 0.5 ? KILL_LEADER : SWITCHOVER;
      const [kind, target] = pick as readonly [FaultKind, Target, number];
      sinceFailover = FAILOVER_KINDS.includes(kind) ? 0 : sinceFailover + 1;
      const x = r();
      const holdMs = holdFor(kind, x);
      const delayMs = kind === 'slow' ? 50 + Math.floor(r() * 451) : 0;
      const gapMs = 200 + Math.floor(r() * 500);
      return { n, kind, target, holdMs, delayMs, gapMs };
    },
  };
}

function pickWeighted(x: number): readonly [FaultKind, Target, number] {
  const total = MENU.reduce((s, m) => s + m[2], 0);
  let left = x * total;
  for (const m of MENU) {
    left -= m[2];
    if (left < 0) return m;
  }
  return MENU[MENU.length - 1] as readonly [FaultKind, Target, number];
}

/**
 * Pauses 1-20 s, partitions 1-30 s (both skewed short, x to the sixth: a mean of 3.7 s and 5.1 s),
 * slow links 2-10 s (x squared: a mean of 4.7 s). Skewed less (pauses and partitions x cubed, then
 * to the fourth, slow links even), fresh-clone 900 s runs made 95 and 99 faults, under the 100 a
 * long run is judged by: its holds took over half of the run.
 */
function holdFor(kind: FaultKind, x: number): number {
  switch (kind) {
    case 'pause':
      return Math.round(1_000 + 19_000 * x ** 6);
    case 'partition':
      return Math.round(1_000 + 29_000 * x ** 6);
    case 'slow':
      return Math.round(2_000 + 8_000 * x ** 2);
    case 'kill':
      return Math.round(3_000 * x);
    default:
      return 0;
  }
}

/** The seed from CHAOS_SEED, or a random one. */
export function seedFrom(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return Math.floor(Math.random() * 2 ** 31);
  const seed = Number(text);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error(`CHAOS_SEED must be a whole number in [0, 2^32): ${text}`);
  return seed;
}
