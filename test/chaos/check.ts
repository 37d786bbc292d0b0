// The chaos run's independent checker. It reads only the history file (what clients were told,
// history.ts) and the final stores through its own connection (and the owning service's API for
// the SPOT balances and the conservation check), never the load's memory, and proves:
//   committed     every transfer answered COMMITTED exists exactly once and is COMMITTED;
//   failed        every transfer answered FAILED / ROLLED_BACK moved nothing;
//   answers       the final answers one key got agree with each other;
//   movements     every deposit or withdrawal answered DONE is DONE, once; one refused is not;
//   once          no transfer moved money twice (the Funding adapter's operations match its state);
//   balances      each user's FUNDING and SPOT balance = deposits - withdrawals -/+ the committed
//                 transfers, as the database tells them (the seed is deposits too);
//   epoch         no answer came from an epoch lower than one an answer received before the
//                 request was sent had already named (x-owner-epoch);
//   terminal      after the last heal every transfer finished;
//   invariant     the service's conservation check shows 0 differences.
// checkHistory is pure (unit-tested on hand-made histories); readSnapshot reads the stores.

import type { Sql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import { token } from '../drill/drill.js';
import { ACCOUNT_TYPE } from '../../src/db/transfer-writes.js';
import { STATE_IDS } from '../../src/domain/fsm.js';
import type { HistoryEntry } from './history.js';

const { COMMITTED, FAILED, ROLLED_BACK } = STATE_IDS;
const TERMINAL: number[] = [COMMITTED, FAILED, ROLLED_BACK];
const FUNDING = ACCOUNT_TYPE.FUNDING;

export type DbTransfer = {
  readonly reqId: string;
  readonly user: string;
  readonly clientOrderId: string | null;
  readonly state: number;
  readonly asset: string;
  readonly amount: bigint;
  readonly sourceType: number;
  /** The Funding adapter's APPLIED operations for it, sorted and joined by commas ('' for none). */
  readonly ops: string;
};

export type DbMovement = {
  readonly ref: string;
  readonly kind: 'DEPOSIT' | 'WITHDRAW';
  readonly user: string;
  readonly account: 'FUNDING' | 'SPOT';
  readonly asset: string;
  readonly amount: bigint;
  readonly state: string;
};

export type DbBalance = { readonly user: string; readonly asset: string; readonly funding: bigint; readonly spot: bigint };

export type Snapshot = {
  readonly transfers: readonly DbTransfer[];
  readonly movements: readonly DbMovement[];
  /** null: unreadable (no instance served the balances). */
  readonly balances: readonly DbBalance[] | null;
  readonly openTransfers: number;
  readonly invariant: { readonly ok: boolean; readonly detail: string };
};

/** Every violation of the history against the final stores. */
export function checkHistory(history: readonly HistoryEntry[], db: Snapshot): Violation[] {
  return [
    ...checkTransferAnswers(history, db),
    ...checkMovementAnswers(history, db),
    ...checkOnce(db),
    ...checkBalances(db),
    ...checkEpochs(history),
    ...checkEnd(db),
  ];
}

type Body = { state?: string; req_id?: string; duplicate?: boolean; code?: string };

/** The final answers each key got (not 500/503/202, not none), by key, in the order received. */
function finalAnswers(history: readonly HistoryEntry[], op: 'transfer' | 'movement'): Map<string, HistoryEntry[]> {
  const out = new Map<string, HistoryEntry[]>();
  for (const e of history) {
    if ((op === 'transfer') !== (e.op === 'transfer')) continue;
    if (e.status === null || e.status === 500 || e.status === 503 || e.status === 202) continue;
    const id = e.op === 'transfer' ? `${e.user}/${e.key}` : e.key;
    out.set(id, [...(out.get(id) ?? []), e]);
  }
  return out;
}

function checkTransferAnswers(history: readonly HistoryEntry[], db: Snapshot): Violation[] {
  const rows = new Map<string, DbTransfer[]>();
  for (const t of db.transfers) {
    if (t.clientOrderId === null) continue;
    const id = `${t.user}/${t.clientOrderId}`;
    rows.set(id, [...(rows.get(id) ?? []), t]);
  }
  const out: Violation[] = [];
  for (const [id, answers] of finalAnswers(history, 'transfer')) {
    const states = new Set(answers.map((a) => (a.body as Body | null)?.state ?? `HTTP ${a.status}`));
    if (states.size > 1) out.push({ check: 'answers', detail: `${id} was answered ${[...states].join(' and ')}` });
    const found = rows.get(id) ?? [];
    for (const a of answers) {
      const body = (a.body ?? {}) as Body;
      if (body.state === 'COMMITTED') {
        const row = found[0];
        if (found.length !== 1 || row === undefined || row.state !== COMMITTED || row.reqId !== body.req_id)
          out.push({
            check: 'committed',
            detail: `${id} answered COMMITTED (${body.req_id}) by ${a.instance} epoch ${a.epoch}; the database holds ${describe(found)}`,
          });
      }
      if (body.state === 'FAILED' || body.state === 'ROLLED_BACK') {
        const moved = found.filter((r) => r.state === COMMITTED || !movedNothing(r));
        if (moved.length > 0 || found.length > 1)
          out.push({ check: 'failed', detail: `${id} answered ${body.state}; the database holds ${describe(found)}` });
      }
    }
  }
  return out;
}

function describe(rows: readonly DbTransfer[]): string {
  if (rows.length === 0) return 'no such transfer';
  return rows.map((r) => `${r.reqId} state ${r.state} ops [${r.ops}]`).join('; ');
}

/** A transfer that did not commit left nothing at Funding: no operation, or a withdrawal and its refund. */
function movedNothing(r: DbTransfer): boolean {
  return r.ops === '' || r.ops === 'REFUND,WITHDRAW';
}

function checkMovementAnswers(history: readonly HistoryEntry[], db: Snapshot): Violation[] {
  const byRef = new Map(db.movements.map((m) => [m.ref, m]));
  const out: Violation[] = [];
  for (const [ref, answers] of finalAnswers(history, 'movement')) {
    const row = byRef.get(ref);
    const done = answers.filter((a) => a.status === 200 && (a.body as Body | null)?.state === 'DONE');
    const refused = answers.filter((a) => a.status !== 200);
    if (done.length > 0 && refused.length > 0)
      out.push({ check: 'answers', detail: `${ref} was answered DONE and refused (${refused.map((a) => a.status).join(', ')})` });
    if (done.length > 0 && row?.state !== 'DONE')
      out.push({ check: 'movements', detail: `${ref} answered DONE; the database holds ${row?.state ?? 'nothing'}` });
    if (done.length === 0 && refused.length > 0 && row?.state === 'DONE')
      out.push({ check: 'movements', detail: `${ref} refused (${refused[0]?.status}) but DONE in the database` });
    const sent = answers[0]?.request;
    if (row !== undefined && sent !== undefined && (row.user !== sent.user_id || row.account !== sent.account || row.asset !== sent.asset))
      out.push({ check: 'movements', detail: `${ref} is recorded for another account than was asked` });
  }
  return out;
}

/** No transfer moved money twice: one row per key, and the Funding adapter's operations match each transfer's state. */
function checkOnce(db: Snapshot): Violation[] {
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const t of db.transfers) {
    if (t.clientOrderId !== null) {
      const id = `${t.user}/${t.clientOrderId}`;
      if (seen.has(id)) out.push({ check: 'once', detail: `${id} has more than one transfer` });
      seen.add(id);
    }
    const fromFunding = t.sourceType === FUNDING;
    const want = t.state === COMMITTED ? [fromFunding ? 'WITHDRAW' : 'DEPOSIT'] : t.state === ROLLED_BACK ? ['', 'REFUND,WITHDRAW'] : [''];
    if (TERMINAL.includes(t.state) && !want.includes(t.ops))
      out.push({ check: 'once', detail: `${t.reqId} state ${t.state}: Funding applied [${t.ops}], expected [${want.join('] or [')}]` });
  }
  return out;
}

/** Each side on its own equation, so a double credit on one side cannot hide behind a double debit on the other. */
function checkBalances(db: Snapshot): Violation[] {
  if (db.balances === null) return [{ check: 'balances', detail: 'the balances could not be read' }];
  const expected = new Map<string, { funding: bigint; spot: bigint }>();
  const at = (user: string, asset: string) => {
    const k = `${user}/${asset}`;
    const v = expected.get(k) ?? { funding: 0n, spot: 0n };
    expected.set(k, v);
    return v;
  };
  for (const m of db.movements) {
    if (m.state !== 'DONE') continue;
    const v = at(m.user, m.asset);
    const signed = m.kind === 'DEPOSIT' ? m.amount : -m.amount;
    if (m.account === 'FUNDING') v.funding += signed;
    else v.spot += signed;
  }
  for (const t of db.transfers) {
    if (t.state !== COMMITTED) continue;
    const v = at(t.user, t.asset);
    const toSpot = t.sourceType === FUNDING ? t.amount : -t.amount;
    v.funding -= toSpot;
    v.spot += toSpot;
  }
  const out: Violation[] = [];
  const actual = new Map(db.balances.map((b) => [`${b.user}/${b.asset}`, b]));
  for (const k of new Set([...expected.keys(), ...actual.keys()])) {
    const want = expected.get(k) ?? { funding: 0n, spot: 0n };
    const got = actual.get(k) ?? { funding: 0n, spot: 0n };
    if (got.funding !== want.funding) out.push({ check: 'balances', detail: `${k} FUNDING ${got.funding} != expected ${want.funding}` });
    if (got.spot !== want.spot) out.push({ check: 'balances', detail: `${k} SPOT ${got.spot} != expected ${want.spot}` });
  }
  return out;
}

/**
 * An answer that served (anything but none and 503) names its epoch; once an answer naming epoch E
 * was received, no request sent after that may be served by an epoch lower than E.
 */
export function checkEpochs(history: readonly HistoryEntry[]): Violation[] {
  const served = history.filter((e) => e.status !== null && e.status !== 503 && e.epoch !== null && e.epoch !== '');
  const byAnswer = [...served].sort((a, b) => a.answeredAt - b.answeredAt);
  const bySent = [...served].sort((a, b) => a.sentAt - b.sentAt);
  const out: Violation[] = [];
  let i = 0;
  let highest: { epoch: bigint; entry: HistoryEntry } | null = null;
  for (const e of bySent) {
    while (i < byAnswer.length && (byAnswer[i] as HistoryEntry).answeredAt < e.sentAt) {
      const seen = byAnswer[i] as HistoryEntry;
      const epoch = BigInt(seen.epoch as string);
      if (highest === null || epoch > highest.epoch) highest = { epoch, entry: seen };
      i++;
    }
    if (highest !== null && BigInt(e.epoch as string) < highest.epoch)
      out.push({
        check: 'epoch',
        detail: `${e.op} ${e.key} sent at ${e.sentAt} was answered ${e.status} by ${e.instance} (pid ${e.pid}) in epoch ${e.epoch}, after epoch ${highest.epoch} had answered (${highest.entry.key} at ${highest.entry.answeredAt} from ${highest.entry.instance})`,
      });
  }
  return out;
}

function checkEnd(db: Snapshot): Violation[] {
  const out: Violation[] = [];
  if (db.openTransfers !== 0) out.push({ check: 'terminal', detail: `${db.openTransfers} transfers unfinished after the last heal` });
  if (!db.invariant.ok) out.push({ check: 'invariant', detail: db.invariant.detail });
  return out;
}

/** Reads the final stores: waits (up to `finishMs`) for every transfer to finish first. */
export async function readSnapshot(sql: Sql, base: string | null, finishMs: number): Promise<Snapshot> {
  const openCount = async () =>
    Number((await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN ${sql(TERMINAL)}`)[0]?.n ?? 0);
  const deadline = Date.now() + finishMs;
  let openTransfers = await openCount();
  while (openTransfers > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    openTransfers = await openCount();
  }
  const transfers = (
    await sql<
      {
        req_id: string;
        user_id: string;
        client_order_id: string | null;
        state: number;
        asset: string;
        amount: bigint;
        source_type: number;
        ops: string | null;
      }[]
    >`
      SELECT t.req_id, t.user_id::text AS user_id, t.client_order_id, t.state, t.asset, t.amount::bigint AS amount, t.source_type,
             string_agg(o.name, ',' ORDER BY o.name) AS ops
        FROM transfers_tb t LEFT JOIN (funding_operations f JOIN funding_ops o ON o.code = f.op) ON f.transfer_id = t.transfer_id AND f.code IS NULL
       GROUP BY t.req_id, t.user_id, t.client_order_id, t.state, t.asset, t.amount, t.source_type`
  ).map((r) => ({
    reqId: r.req_id,
    user: r.user_id,
    clientOrderId: r.client_order_id,
    state: r.state,
    asset: r.asset,
    amount: BigInt(r.amount),
    sourceType: r.source_type,
    ops: r.ops ?? '',
  }));
  const movements = (
    await sql<
      {
        ref: string;
        kind: 'DEPOSIT' | 'WITHDRAW';
        user_id: string;
        account: 'FUNDING' | 'SPOT';
        asset: string;
        amount: bigint;
        state: string;
      }[]
    >`
      SELECT ref, kind, user_id::text AS user_id, account, asset, amount::bigint AS amount, state FROM external_movements`
  ).map((m) => ({
    ref: m.ref,
    kind: m.kind,
    user: m.user_id,
    account: m.account,
    asset: m.asset,
    amount: BigInt(m.amount),
    state: m.state,
  }));
  const users = [...new Set([...transfers.map((t) => t.user), ...movements.map((m) => m.user)])];
  const balances = base === null ? null : await readBalances(sql, base, users);
  return { transfers, movements, balances, openTransfers, invariant: await readInvariant(base) };
}

async function readBalances(sql: Sql, base: string, users: readonly string[]): Promise<DbBalance[] | null> {
  const funding = await sql<{ user_id: string; asset: string; available: bigint }[]>`
    SELECT user_id::text AS user_id, asset, available::bigint AS available FROM funding_balances`;
  const out = new Map<string, { user: string; asset: string; funding: bigint; spot: bigint }>();
  const at = (user: string, asset: string) => {
    const v = out.get(`${user}/${asset}`) ?? { user, asset, funding: 0n, spot: 0n };
    out.set(`${user}/${asset}`, v);
    return v;
  };
  for (const f of funding) at(f.user_id, f.asset).funding = BigInt(f.available);
  for (const user of users) {
    const r = await fetch(`${base}/api/v1/balances`, { headers: { authorization: `Bearer ${token(BigInt(user))}` } }).catch(() => null);
    if (r === null || !r.ok) return null;
    const body = (await r.json()) as { spot: { asset: string; available: string }[] };
    for (const line of body.spot) at(user, line.asset).spot = toUnits(line.available);
  }
  return [...out.values()];
}

function toUnits(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = text.replace('-', '').split('.');
  const units = BigInt(whole) * 10n ** 8n + BigInt(fraction.padEnd(8, '0').slice(0, 8) || '0');
  return negative ? -units : units;
}

async function readInvariant(base: string | null): Promise<{ ok: boolean; detail: string }> {
  if (base === null) return { ok: false, detail: 'no instance owns the ledger: the conservation check could not run' };
  const r = await fetch(`${base}/admin/v1/invariant`, { headers: { authorization: `Bearer ${token('admin')}` } }).catch(() => null);
  if (r === null) return { ok: false, detail: 'the conservation check got no answer' };
  const body = (await r.json().catch(() => ({}))) as { ok?: boolean };
  return { ok: r.ok && body.ok === true, detail: JSON.stringify(body).slice(0, 2_000) };
}
