// Runs the conservation check on a consistent pair of cuts while transfers keep running:
// 1. UBSCore answers its balances at WAL position P (one command, so one instant of its state).
// 2. PostgreSQL is read in one REPEATABLE READ snapshot, taken after that.
// 3. For every unfinished transfer, and every transfer or SPOT movement last written at or after
//    T0 (PostgreSQL's own clock, read just before step 1), UBSCore tells at which WAL position
//    each operation was applied, so "applied by P" is known exactly, and whether it was applied
//    at all. Only those are asked about: the processed set may have forgotten older final ones.
// A transfer or movement finished by a transaction that began before T0 had all its SPOT effects
// answered before that transaction began, so before P: the balances hold them. T0 and every
// updated_at come from the same clock, so no grace window is needed, and none is used.
// Corrections (external_movements.correction_reason) are not money entering or leaving: they
// repair a balance to what the other movements prove, so the expected figures leave them out.

import type { UbsSend } from '../ubscore/control.js';
import type { Sql } from '../db/sql.js';
import type { UbsOpName } from '../domain/spot-commands.js';
import { stateName, TERMINAL_STATE_IDS } from '../domain/fsm.js';
import { checkConservation, keyOf, type Difference, type Key, type TransferFacts } from './conservation.js';
import { CUT_TIMEOUT_MS, OP_SEQS_BATCH_MAX } from '../limits.js';

export type InvariantReport = {
  readonly checkedAt: string;
  readonly walSeq: number;
  readonly accounts: number;
  readonly transfersExamined: number;
  readonly inFlight: Readonly<Record<string, string>>;
  readonly differences: readonly Difference[];
};

type OpKey = { readonly op: UbsOpName; readonly key: string };

export async function runConservationCheck(sql: Sql, ubs: UbsSend): Promise<InvariantReport> {
  const startedAt = new Date();
  const [clock] = await sql<{ t0: Date }[]>`SELECT clock_timestamp() AS t0`;
  if (clock === undefined) throw new Error('PostgreSQL did not answer its clock');
  const cut = await ubs({ kind: 'audit_cut' }, CUT_TIMEOUT_MS);
  if (cut === null || cut.kind !== 'audit_cut') throw new Error('UBSCore did not answer the audit cut');
  const spot = new Map<Key, bigint>(cut.accounts.map((a) => [keyOf(a.userId, a.asset), a.available]));
  const pg = await readPostgres(sql, clock.t0);
  // A settled movement is counted without asking: the retention (src/ubscore/processed/retention-plan.ts) may have
  // pruned its key from UBSCore's processed set, and a pruned key answers "never applied".
  const unsettled = pg.spotMovements.filter((m) => !m.settled).map((m) => ({ op: m.op, key: m.ref }));
  const seqs = await opSeqs(ubs, [...unsettled, ...pg.transfers.flatMap(spotOps)]);
  const byCut = (op: UbsOpName, key: string) => {
    const seq = seqs.get(`${op}:${key}`);
    return seq !== undefined && seq !== null && seq <= cut.seq;
  };
  const ever = (op: UbsOpName, key: string) => (seqs.get(`${op}:${key}`) ?? null) !== null;
  const external = new Map(pg.externalFunding);
  for (const m of pg.spotMovements) if (m.settled || byCut(m.op, m.ref)) external.set(m.k, (external.get(m.k) ?? 0n) + m.signed);
  const transfers: TransferFacts[] = pg.transfers.map((t) => ({
    ...t,
    spotByCut: { withdraw: byCut('WITHDRAW', t.reqId), deposit: byCut('DEPOSIT', t.reqId), refund: byCut('REFUND', t.reqId) },
    spotEver: { withdraw: ever('WITHDRAW', t.reqId), deposit: ever('DEPOSIT', t.reqId), refund: ever('REFUND', t.reqId) },
  }));
  const result = checkConservation({ funding: pg.funding, spot, external, transfers });
  return {
    checkedAt: startedAt.toISOString(),
    walSeq: cut.seq,
    accounts: result.accounts,
    transfersExamined: transfers.length,
    inFlight: Object.fromEntries([...result.inFlight].map(([k, v]) => [k, v.toString()])),
    differences: result.differences,
  };
}

type PgCut = {
  funding: Map<Key, bigint>;
  externalFunding: Map<Key, bigint>;
  spotMovements: { k: Key; ref: string; op: UbsOpName; signed: bigint; settled: boolean }[];
  transfers: Omit<TransferFacts, 'spotByCut' | 'spotEver'>[];
};

async function readPostgres(sql: Sql, t0: Date): Promise<PgCut> {
  return sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
    const funding = await tx<
      { user_id: bigint; asset: string; available: bigint }[]
    >`SELECT user_id, asset, available FROM funding_balances`;
    const ext = await tx<{ user_id: bigint; asset: string; net: bigint }[]>`
      SELECT user_id, asset, sum(CASE WHEN kind = 'DEPOSIT' THEN amount ELSE -amount END)::bigint AS net
        FROM external_movements WHERE account = 'FUNDING' AND state = 'DONE' AND correction_reason IS NULL GROUP BY user_id, asset`;
    const spot = await tx<{ ref: string; user_id: bigint; asset: string; kind: string; amount: bigint; state: string; updated_at: Date }[]>`
      SELECT ref, user_id, asset, kind, amount, state, updated_at FROM external_movements
       WHERE account = 'SPOT' AND state <> 'REJECTED' AND correction_reason IS NULL`;
    const rows = await tx<
      { req_id: string; user_id: bigint; asset: string; amount: bigint; source_type: number; state: number; ops: string | null }[]
    >`
      SELECT t.req_id, t.user_id, t.asset, t.amount, t.source_type, t.state, string_agg(o.name, ',') AS ops
        FROM transfers_tb t LEFT JOIN (funding_operations f JOIN funding_ops o ON o.code = f.op) ON f.transfer_id = t.transfer_id AND f.code IS NULL
       WHERE t.state <> ALL (${tx.array([...TERMINAL_STATE_IDS])}::smallint[]) OR t.updated_at >= ${t0}
       GROUP BY t.req_id, t.user_id, t.asset, t.amount, t.source_type, t.state`;
    return {
      funding: new Map(funding.map((r) => [keyOf(r.user_id, r.asset), r.available])),
      externalFunding: new Map(ext.map((r) => [keyOf(r.user_id, r.asset), r.net])),
      spotMovements: spot.map((r) => ({
        k: keyOf(r.user_id, r.asset),
        ref: r.ref,
        op: r.kind === 'DEPOSIT' ? 'EXTERNAL_DEPOSIT' : 'EXTERNAL_WITHDRAW',
        signed: r.kind === 'DEPOSIT' ? r.amount : -r.amount,
        settled: r.state === 'DONE' && r.updated_at < t0,
      })),
      transfers: rows.map((r) => {
        const ops = new Set((r.ops ?? '').split(','));
        const state = stateName(r.state);
        if (state === null) throw new Error(`transfer ${r.req_id} has unknown state ${r.state}`);
        return {
          reqId: r.req_id,
          userId: r.user_id,
          asset: r.asset,
          amount: r.amount,
          fromFunding: r.source_type === 1,
          state,
          funding: { withdraw: ops.has('WITHDRAW'), deposit: ops.has('DEPOSIT'), refund: ops.has('REFUND') },
        };
      }),
    };
  });
}

function spotOps(t: { reqId: string }): OpKey[] {
  return (['WITHDRAW', 'DEPOSIT', 'REFUND'] as const).map((op) => ({ op, key: t.reqId }));
}

/** The WAL position at which UBSCore applied each operation (null: not applied). */
async function opSeqs(ubs: UbsSend, keys: readonly OpKey[]): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  for (let i = 0; i < keys.length; i += OP_SEQS_BATCH_MAX) {
    const chunk = keys.slice(i, i + OP_SEQS_BATCH_MAX);
    const answer = await ubs({ kind: 'op_seqs', keys: chunk }, CUT_TIMEOUT_MS);
    if (answer === null || answer.kind !== 'op_seqs') throw new Error('UBSCore did not answer op_seqs');
    chunk.forEach((k, j) => {
      out.set(`${k.op}:${k.key}`, answer.seqs[j] ?? null);
    });
  }
  return out;
}
