// The last minute of transfer requests, for the operator console: a ring of one-second slots,
// each a count and a small latency histogram. Recording is O(1) and allocates nothing; a
// summary reads the whole ring (PULSE_WINDOW_S slots × PULSE_BUCKETS_MS buckets).

/** How far back "now" looks. */
export const PULSE_WINDOW_S = 60;
/** Upper bounds of the latency buckets; the last slot of each histogram counts what is above. */
const PULSE_BUCKETS_MS = [1, 2, 5, 10, 15, 20, 25, 35, 50, 75, 100, 150, 250, 500, 1000, 2500, 5000] as const;

type Slot = { second: number; requests: number; accepted: number; buckets: Uint32Array };

type PulseSummary = {
  readonly window_s: number;
  readonly requests: number;
  /** Answered 200 or 202: a transfer exists and is committed or moving. */
  readonly accepted: number;
  /** accepted / window, one decimal, as text. */
  readonly transfers_per_s: string;
  /** The upper bound of the bucket holding the 99th percentile; null with no request. */
  readonly p99_ms: number | null;
  /** True when the 99th percentile lies above the last bound. */
  readonly p99_above_max: boolean;
};

export class Pulse {
  private readonly slots: Slot[] = Array.from({ length: PULSE_WINDOW_S }, () => ({
    second: -1,
    requests: 0,
    accepted: 0,
    buckets: new Uint32Array(PULSE_BUCKETS_MS.length + 1),
  }));

  constructor(private readonly nowMs: () => number = Date.now) {}

  record(latencyMs: number, status: number): void {
    const second = Math.floor(this.nowMs() / 1000);
    const slot = this.slots[second % PULSE_WINDOW_S] as Slot;
    if (slot.second !== second) {
      slot.second = second;
      slot.requests = 0;
      slot.accepted = 0;
      slot.buckets.fill(0);
    }
    slot.requests += 1;
    if (status === 200 || status === 202) slot.accepted += 1;
    let i = 0;
    while (i < PULSE_BUCKETS_MS.length && latencyMs > (PULSE_BUCKETS_MS[i] as number)) i += 1;
    slot.buckets[i] = (slot.buckets[i] ?? 0) + 1;
  }

  summary(): PulseSummary {
    const now = Math.floor(this.nowMs() / 1000);
    const totals = new Array<number>(PULSE_BUCKETS_MS.length + 1).fill(0);
    let requests = 0;
    let accepted = 0;
    for (const slot of this.slots) {
      // The window is the current second and the ones before it: a slot older is stale.
      if (slot.second <= now - PULSE_WINDOW_S || slot.second > now) continue;
      requests += slot.requests;
      accepted += slot.accepted;
      slot.buckets.forEach((n, i) => {
        totals[i] = (totals[i] ?? 0) + n;
      });
    }
    return {
      window_s: PULSE_WINDOW_S,
      requests,
      accepted,
      transfers_per_s: (accepted / PULSE_WINDOW_S).toFixed(1),
      ...p99(totals, requests),
    };
  }
}

function p99(totals: readonly number[], requests: number): { p99_ms: number | null; p99_above_max: boolean } {
  if (requests === 0) return { p99_ms: null, p99_above_max: false };
  const rank = Math.ceil(requests * 0.99);
  let seen = 0;
  for (let i = 0; i < PULSE_BUCKETS_MS.length; i++) {
    seen += totals[i] ?? 0;
    if (seen >= rank) return { p99_ms: PULSE_BUCKETS_MS[i] as number, p99_above_max: false };
  }
  return { p99_ms: PULSE_BUCKETS_MS[PULSE_BUCKETS_MS.length - 1] as number, p99_above_max: true };
}
