// The failover drill's clients: make drill's random transfers (both directions, both assets), each
// under a client_order_id of its own, sent through the balancer to whichever instance is ready. A
// request that got no answer (connection lost, timed out) or a 503/500 is an unknown outcome: it is
// sent again with the SAME client_order_id and body, so a transfer is never made twice.

import { drive, randomTransfer, token } from '../drill/drill.js';
import type { Balancer } from './lb.js';
import { sleep } from './processes.js';

const REQUEST_TIMEOUT_MS = 3_000;
const RETRY_PAUSE_MS = 25;
/** A transfer still unanswered after this long is given up (and reported); the stores still decide. */
const TRANSFER_GIVE_UP_MS = 90_000;

export type LoadTally = {
  /** The req_id of every transfer a client was answered COMMITTED. */
  readonly committed: Set<string>;
  sent: number;
  answered: number;
  retries: number;
  /** Transfers never answered within TRANSFER_GIVE_UP_MS, or when the drill gave up. */
  unanswered: number;
  /** Answers no retried request may get (409: the same key was taken by another request). */
  readonly anomalies: string[];
};

export type Load = {
  readonly stop: () => Promise<void>;
  readonly abandon: () => void;
  /** Holds every client before its next transfer; resolves once no transfer is under way (each sent until answered). */
  readonly pause: () => Promise<void>;
  readonly resume: () => void;
};

export function newTally(): LoadTally {
  return { committed: new Set(), sent: 0, answered: 0, retries: 0, unanswered: 0, anomalies: [] };
}

/** `clients` concurrent clients sending transfers of `users` through `lb` until stopped. */
export function startLoad(lb: Balancer, users: readonly bigint[], clients: number, tally: LoadTally): Load {
  let abandoned = false;
  let next = 0;
  let inFlight = 0;
  let stopped = false;
  let gate: { held: Promise<void>; release: () => void } | null = null;
  const prefix = `fo${Date.now().toString(36)}`;
  const load = drive(clients, async () => {
    while (gate !== null) await gate.held;
    if (stopped) return;
    inFlight++;
    try {
      await sendOnce(lb, users, `${prefix}-${next++}`, tally, () => abandoned);
    } finally {
      inFlight--;
    }
  });
  const resume = (): void => {
    gate?.release();
    gate = null;
  };
  return {
    stop: () => {
      stopped = true;
      const stopping = load.stop();
      resume();
      return stopping;
    },
    pause: async () => {
      if (gate === null) {
        let release = (): void => undefined;
        const held = new Promise<void>((resolve) => (release = resolve));
        gate = { held, release };
      }
      while (inFlight > 0) await sleep(RETRY_PAUSE_MS);
    },
    resume,
    // The drill gives up (no instance will be ready again): clients stop retrying at once.
    abandon: () => {
      abandoned = true;
    },
  };
}

/** One transfer, sent until it gets a final answer (anything but no answer, 500 or 503). */
async function sendOnce(lb: Balancer, users: readonly bigint[], key: string, tally: LoadTally, abandoned: () => boolean): Promise<void> {
  const { userId, body } = randomTransfer(users);
  const request = { ...body, client_order_id: key };
  const giveUpAt = Date.now() + TRANSFER_GIVE_UP_MS;
  tally.sent++;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) tally.retries++;
    const answer = await lb.send('POST', '/api/v1/internal_transfer', {
      token: token(userId),
      body: request,
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    if (answer !== null && answer.status !== 503 && answer.status !== 500) {
      tally.answered++;
      const json = answer.body as { state?: string; req_id?: string; code?: string };
      if (json.state === 'COMMITTED' && json.req_id !== undefined) tally.committed.add(json.req_id);
      if (answer.status === 409) tally.anomalies.push(`${key}: 409 ${json.code ?? ''} from ${answer.instance} (pid ${answer.pid})`);
      return;
    }
    if (abandoned() || Date.now() > giveUpAt) {
      tally.unanswered++;
      return;
    }
    await sleep(RETRY_PAUSE_MS);
  }
}
