// The chaos run's clients: transfers both ways (make drill's random transfers), and now and then an
// admin deposit or withdrawal, each under a key of its own (client_order_id, ref), sent through the
// Balancer to whichever instance is ready. No answer, a 500 or a 503 (or a 202 PENDING movement) is
// an unknown outcome: sent again with the SAME key and body until a final answer. Every attempt is
// appended to the history file.

import { drive, randomTransfer, token } from '../drill/drill.js';
import type { Balancer } from '../failover/lb.js';
import { sleep } from '../failover/processes.js';
import type { HistoryFile, Op } from './history.js';

const REQUEST_TIMEOUT_MS = 3_000;
const RETRY_PAUSE_MS = 50;
/** After the nemesis stops, a request not final within this long is given up (the stores still decide). */
const GIVE_UP_AFTER_STOP_MS = 120_000;

export type Request = { readonly op: Op; readonly key: string; readonly user: bigint; readonly body: Record<string, string> };

export type ClientCounts = { sent: number; final: number; attempts: number; noAnswer: number; status5xx: number; givenUp: number };

/** One request of the mix: mostly transfers, 1 in 20 a deposit, 1 in 20 a withdrawal (small, so it is rarely short of funds). */
export function nextRequest(users: readonly bigint[], key: string, r: () => number = Math.random): Request {
  const roll = r();
  if (roll < 0.9) {
    const { userId, body } = randomTransfer(users);
    return { op: 'transfer', key, user: userId, body: { ...body, client_order_id: key } };
  }
  const user = users[Math.floor(r() * users.length)] as bigint;
  const op: Op = roll < 0.95 ? 'deposit' : 'withdraw';
  const body = {
    user_id: user.toString(),
    account: r() < 0.5 ? 'FUNDING' : 'SPOT',
    asset: r() < 0.5 ? 'USDT' : 'BTC',
    amount: `${1 + Math.floor(r() * 5)}`,
    ref: key,
  };
  return { op, key, user, body };
}

const PATHS: Record<Op, string> = { transfer: '/api/v1/internal_transfer', deposit: '/admin/v1/deposit', withdraw: '/admin/v1/withdraw' };

/** Sends `req` until a final answer; every attempt goes to the history. */
export async function sendUntilFinal(lb: Balancer, history: HistoryFile, req: Request, counts: ClientCounts, giveUpAt: () => number) {
  counts.sent++;
  const auth = req.op === 'transfer' ? token(req.user) : token('admin');
  for (let attempt = 0; ; attempt++) {
    counts.attempts++;
    const sentAt = Date.now();
    const a = await lb.send('POST', PATHS[req.op], { token: auth, body: req.body, timeoutMs: REQUEST_TIMEOUT_MS });
    history.append({
      op: req.op,
      key: req.key,
      user: req.user.toString(),
      request: req.body,
      attempt,
      sentAt,
      answeredAt: a?.receivedAt ?? Date.now(),
      status: a?.status ?? null,
      body: a?.body ?? null,
      epoch: a?.ownerEpoch ?? null,
      instance: a?.instance ?? null,
      pid: a?.pid ?? null,
    });
    const pending = a?.status === 202;
    if (a !== null && a.status !== 503 && a.status !== 500 && !pending) {
      counts.final++;
      return a;
    }
    if (a === null) counts.noAnswer++;
    else if (!pending) counts.status5xx++;
    if (Date.now() > giveUpAt()) {
      counts.givenUp++;
      return null;
    }
    await sleep(RETRY_PAUSE_MS);
  }
}

export type Clients = { readonly counts: ClientCounts; readonly stop: () => Promise<void> };

/** `n` clients sending the mix through `lb` until stopped; stop lets each finish its request (given up 120 s later). */
export function startClients(lb: Balancer, history: HistoryFile, users: readonly bigint[], n: number, prefix: string): Clients {
  const counts: ClientCounts = { sent: 0, final: 0, attempts: 0, noAnswer: 0, status5xx: 0, givenUp: 0 };
  let next = 0;
  let stoppedAt = Number.POSITIVE_INFINITY;
  const giveUpAt = () => stoppedAt + GIVE_UP_AFTER_STOP_MS;
  const load = drive(n, async () => {
    await sendUntilFinal(lb, history, nextRequest(users, `${prefix}-${next++}`), counts, giveUpAt);
  });
  return {
    counts,
    stop: () => {
      stoppedAt = Date.now();
      return load.stop();
    },
  };
}
