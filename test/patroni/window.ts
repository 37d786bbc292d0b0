// What one PostgreSQL fault did to the service, as its clients saw it: from the moment the fault
// began, when Patroni had a new leader running, when the first transfer sent after that was
// answered COMMITTED (writes are back), the longest time between two COMMITTED answers of the
// load, how long /readyz was not 200, and which answers the clients got meanwhile (503, 500, none).

import { token } from '../drill/drill.js';
import type { Balancer } from '../failover/lb.js';
import type { LoadTally } from '../failover/load.js';
import { readiness } from '../failover/processes.js';
import { sleep } from './cluster.js';

const PROBE_POLL_MS = 50;
const PROBE_TIMEOUT_MS = 3_000;

export type FaultWindow = {
  readonly fault: string;
  /** Milliseconds from the fault until Patroni had the new leader running. */
  readonly leaderMs: number;
  /** Milliseconds from the fault to the first COMMITTED answer of a transfer sent once the new leader ran. */
  readonly writesBackMs: number | null;
  /** The longest time between two COMMITTED answers of the load's clients, from the fault until writes were back. */
  readonly longestCommitGapMs: number;
  /** Milliseconds from the fault until /readyz answered 200 again (0: it never stopped). */
  readonly readyAgainMs: number | null;
  /** Milliseconds /readyz was not 200, in total, within the window. */
  readonly unreadyMs: number;
  /** Answers of the load's clients in the window, by status; `none`: no answer (a retry followed). */
  readonly clientAnswers: Record<string, number>;
  readonly clientRetries: number;
};

export type Probe = { readonly base: string; readonly lb: Balancer; readonly tally: LoadTally; readonly users: readonly bigint[] };

/**
 * Probes the service from `t0` (the fault's start): `newLeader` resolves when Patroni has the new
 * leader running; then until writes are back and the service is ready, or `timeoutMs`.
 */
export async function measureWindow(
  fault: string,
  p: Probe,
  t0: number,
  newLeader: Promise<unknown>,
  timeoutMs: number,
): Promise<FaultWindow> {
  const { base, lb, tally, users } = p;
  const retriesBefore = tally.retries;
  const answersBefore = lb.recorded.length;
  const readyWatch = watchReadiness(base, t0, timeoutMs);
  await newLeader;
  const leaderAt = Date.now();
  const committedAt = await firstCommit(base, users, leaderAt, t0 + timeoutMs);
  const writesBackMs = committedAt === null ? null : committedAt - t0;
  const ready = await readyWatch.settled(writesBackMs === null ? 0 : 2_000);
  const commits = lb.recorded
    .slice(answersBefore)
    .filter((a) => (a.body as { state?: string } | null)?.state === 'COMMITTED')
    .map((a) => a.receivedAt);
  const longestCommitGapMs = longestGap([t0, ...commits.filter((t) => t < (committedAt ?? Date.now())), committedAt ?? Date.now()]);
  const clientAnswers: Record<string, number> = {};
  for (const a of lb.recorded.slice(answersBefore)) clientAnswers[String(a.status)] = (clientAnswers[String(a.status)] ?? 0) + 1;
  const clientRetries = tally.retries - retriesBefore;
  const errors = Object.entries(clientAnswers).reduce((n, [s, c]) => n + (s === '503' || s === '500' ? c : 0), 0);
  if (clientRetries > errors) clientAnswers.none = clientRetries - errors;
  return {
    fault,
    leaderMs: leaderAt - t0,
    writesBackMs,
    longestCommitGapMs,
    readyAgainMs: ready.readyAgainMs,
    unreadyMs: ready.unreadyMs,
    clientAnswers,
    clientRetries,
  };
}

function longestGap(times: readonly number[]): number {
  let gap = 0;
  for (let i = 1; i < times.length; i++) gap = Math.max(gap, (times[i] as number) - (times[i - 1] as number));
  return gap;
}

/** A new transfer, sent at `sentAt` and again with the same key until it is answered; when its COMMITTED came (epoch ms). */
async function firstCommit(base: string, users: readonly bigint[], sentAt: number, deadline: number): Promise<number | null> {
  const userId = users[0] as bigint;
  const body = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1', client_order_id: `probe-${sentAt}` };
  while (Date.now() < deadline) {
    const state = await fetch(`${base}/api/v1/internal_transfer`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token(userId)}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    }).then(
      async (r) => ((await r.json()) as { state?: string }).state ?? `HTTP ${r.status}`,
      () => null,
    );
    if (state === 'COMMITTED') return Date.now();
    if (state === 'FAILED' || state === 'ROLLED_BACK') throw new Error(`the probe transfer after the fault ended ${state}`);
    await sleep(PROBE_POLL_MS);
  }
  return null;
}

function watchReadiness(
  base: string,
  t0: number,
  timeoutMs: number,
): { settled: (graceMs: number) => Promise<{ readyAgainMs: number | null; unreadyMs: number }> } {
  let stop = false;
  let unreadyMs = 0;
  let readyAgainMs: number | null = 0;
  const done = (async () => {
    let last = t0;
    while (!stop && Date.now() - t0 < timeoutMs) {
      const ok = (await readiness(base))?.status === 200;
      const now = Date.now();
      if (!ok) {
        unreadyMs += now - last;
        readyAgainMs = null;
      } else if (readyAgainMs === null) readyAgainMs = now - t0;
      last = now;
      await sleep(PROBE_POLL_MS);
    }
  })();
  return {
    settled: async (graceMs) => {
      const deadline = Date.now() + graceMs;
      while (readyAgainMs === null && Date.now() < deadline) await sleep(PROBE_POLL_MS);
      stop = true;
      await done;
      return { readyAgainMs, unreadyMs };
    },
  };
}
