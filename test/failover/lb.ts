// The failover drill's load balancer: sends each request to whichever instance answers
// /readyz 200, as a load balancer with health checks would, and records every answer with the
// instance that gave it and the time it was received, so the drill can check that a fenced
// former owner answered nothing after the takeover.

/** One instance behind the balancer: a name (its DATA_DIR in the drill), its base URL and its process id. */
export type Instance = { readonly name: string; readonly base: string; readonly pid: number };

/** One answer as received: which instance and process, when (epoch ms), the request and its status and body. */
export type Answer = {
  readonly instance: string;
  readonly pid: number;
  readonly receivedAt: number;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly body: unknown;
  /** The owner epoch the answering process named (x-owner-epoch), or null when it named none. */
  readonly ownerEpoch: string | null;
};

/** What clients saw go wrong in a window of time: answers 503 and 500, and requests with no answer (none ready, or lost). */
export type ClientErrors = { readonly status503: number; readonly status500: number; readonly noAnswer: number };

const READY_PROBE_TIMEOUT_MS = 500;

export class Balancer {
  private readonly answers: Answer[] = [];
  /** When each request that got no answer ended (epoch ms). */
  private readonly missed: number[] = [];
  /** The instance that answered /readyz 200 last; asked first. */
  private current: Instance | null = null;

  constructor(private readonly instances: () => readonly Instance[]) {}

  get recorded(): readonly Answer[] {
    return this.answers;
  }

  /** The first instance that answers /readyz 200 now, or null when none does. */
  async ready(): Promise<Instance | null> {
    const candidates = [...this.instances()];
    const first = this.current;
    if (first !== null) candidates.sort((a, b) => Number(b.pid === first.pid) - Number(a.pid === first.pid));
    for (const instance of candidates) {
      const status = await fetch(`${instance.base}/readyz`, { signal: AbortSignal.timeout(READY_PROBE_TIMEOUT_MS) }).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) {
        this.current = instance;
        return instance;
      }
    }
    this.current = null;
    return null;
  }

  /**
   * Sends one request to a ready instance and records its answer; null when no instance was ready
   * or the request got no answer (an unknown outcome: the caller retries with the same key).
   */
  async send(method: string, path: string, opts: { token: string; body?: unknown; timeoutMs: number }): Promise<Answer | null> {
    const instance = this.current ?? (await this.ready());
    if (instance === null) return this.miss();
    try {
      const response = await fetch(`${instance.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${opts.token}`, 'content-type': 'application/json' },
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      const text = await response.text();
      const answer: Answer = {
        instance: instance.name,
        pid: instance.pid,
        receivedAt: Date.now(),
        method,
        path,
        status: response.status,
        body: parsed(text),
        ownerEpoch: response.headers.get('x-owner-epoch'),
      };
      this.answers.push(answer);
      // A 503 may be a standby or a draining owner: ask the health checks again next time.
      if (response.status === 503) this.current = null;
      return answer;
    } catch {
      this.current = null;
      return this.miss();
    }
  }

  private miss(): null {
    this.missed.push(Date.now());
    return null;
  }

  /** The errors clients saw between `from` and `to` (epoch ms). */
  errorsBetween(from: number, to: number): ClientErrors {
    const within = (at: number) => at >= from && at <= to;
    let status503 = 0;
    let status500 = 0;
    for (let i = this.answers.length - 1; i >= 0; i--) {
      const a = this.answers[i] as Answer;
      if (a.receivedAt < from) break;
      if (!within(a.receivedAt)) continue;
      if (a.status === 503) status503++;
      if (a.status === 500) status500++;
    }
    return { status503, status500, noAnswer: this.missed.filter(within).length };
  }

  /** Every answer the process `pid` gave that was received after `at` (epoch ms). */
  answersAfter(pid: number, at: number): Answer[] {
    return this.answers.filter((a) => a.pid === pid && a.receivedAt > at);
  }
}

/** The body as JSON, or its text when it is not JSON: every answer is recorded, whatever it holds. */
function parsed(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
