// The failover drill's schedule: cycle n runs kind n of a rotation. The rotation is
// FAILOVER_KINDS (a comma-separated list, in that order) or, by default, every kind:
//   sigkill, sigstop, stale-primary, pg-restart, pg-pause
// so FAILOVER_CYCLES=2 runs a SIGKILL and a SIGSTOP (CI), 5 runs each kind once, 8 adds a SIGKILL,
// a SIGSTOP and a second stale-primary. A sigkill deletes the killed primary's DATA_DIR on its
// 1st, 3rd, ... run (the machine is lost) and keeps it on the others. stale-primary comes before
// the PostgreSQL faults so that, at its first run, PostgreSQL holds no snapshot yet but the one
// its clean stop writes. The PostgreSQL faults need the drill's own server: with DATABASE_URL
// they are left out of the default rotation and refused in FAILOVER_KINDS.

import { type CycleContext, type CycleKind, type CycleReport, killCycle, stopCycle } from './cycles.js';
import { pgPauseCycle, pgRestartCycle } from './pg-cycles.js';
import { stalePrimaryCycle } from './stale-cycle.js';

export const CYCLE_KINDS: readonly CycleKind[] = ['sigkill', 'sigstop', 'stale-primary', 'pg-restart', 'pg-pause'];
const PG_KINDS: readonly CycleKind[] = ['pg-restart', 'pg-pause'];

/** The rotation from FAILOVER_KINDS (`text`), or every kind; `ownPg`: the drill runs its own PostgreSQL. */
export function rotation(text: string | undefined, ownPg: boolean): CycleKind[] {
  if (text === undefined || text.trim() === '') return CYCLE_KINDS.filter((k) => ownPg || !PG_KINDS.includes(k));
  const kinds = text.split(',').map((k) => k.trim());
  const unknown = kinds.filter((k) => !(CYCLE_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new Error(`FAILOVER_KINDS: unknown ${unknown.join(', ')}; the kinds are ${CYCLE_KINDS.join(', ')}`);
  const chosen = kinds as CycleKind[];
  const needPg = chosen.filter((k) => PG_KINDS.includes(k));
  if (!ownPg && needPg.length > 0)
    throw new Error(`FAILOVER_KINDS: ${needPg.join(', ')} restart or pause the drill's own PostgreSQL, which DATABASE_URL replaces`);
  return chosen;
}

/** Cycle `cycle` (from 1) of `kinds`: its kind, and for a sigkill whether the DATA_DIR goes too. */
export function scheduled(kinds: readonly CycleKind[], cycle: number): { readonly kind: CycleKind; readonly wipe: boolean } {
  const kind = kinds[(cycle - 1) % kinds.length] as CycleKind;
  return { kind, wipe: kind === 'sigkill' && countBefore(kinds, cycle, 'sigkill') % 2 === 0 };
}

/** How many cycles before `cycle` ran `kind`. */
function countBefore(kinds: readonly CycleKind[], cycle: number, kind: CycleKind): number {
  let n = 0;
  for (let c = 1; c < cycle; c++) if (kinds[(c - 1) % kinds.length] === kind) n++;
  return n;
}

export function runCycle(ctx: CycleContext, cycle: number, kinds: readonly CycleKind[]): Promise<CycleReport> {
  const { kind, wipe } = scheduled(kinds, cycle);
  switch (kind) {
    case 'sigkill':
      return killCycle(ctx, cycle, wipe);
    case 'sigstop':
      return stopCycle(ctx, cycle);
    case 'pg-restart':
      return pgRestartCycle(ctx, cycle);
    case 'pg-pause':
      return pgPauseCycle(ctx, cycle);
    case 'stale-primary':
      return stalePrimaryCycle(ctx, cycle);
  }
}
