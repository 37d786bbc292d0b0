// The conservation rule (spec 001 §7.2, MON-003) as a pure function over two cuts: UBSCore's,
// taken first at WAL position P, and PostgreSQL's, one repeatable-read snapshot taken after it.
// Per user and asset: FUNDING + SPOT + in flight = net external deposits − withdrawals.
//
// The cuts are not simultaneous, so each transfer is judged by which effects each store had
// applied in its own cut. PostgreSQL's cut is later, so it may see a FUNDING effect whose SPOT
// counterpart UBSCore applied after P: a SPOT→FUNDING credit whose SPOT debit is after P is
// still in SPOT at P and is subtracted once ("crossing"); a FUNDING→SPOT debit whose SPOT credit
// is after P is simply in flight. Every other combination is either consistent or a violation.

export type Key = string; // `${userId}/${asset}`

export const keyOf = (userId: bigint, asset: string): Key => `${userId}/${asset}`;

export type TransferFacts = {
  readonly reqId: string;
  readonly userId: bigint;
  readonly asset: string;
  readonly amount: bigint;
  readonly fromFunding: boolean;
  /** Funding adapter effects in PostgreSQL's cut. */
  readonly funding: { readonly withdraw: boolean; readonly deposit: boolean; readonly refund: boolean };
  /** UBSCore effects applied at or before P. */
  readonly spotByCut: { readonly withdraw: boolean; readonly deposit: boolean; readonly refund: boolean };
  /** Whether UBSCore's WITHDRAW was applied at all (by the time of the follow-up query). */
  readonly spotWithdrawEver: boolean;
};

export type Difference = { readonly key: Key; readonly expected: bigint; readonly actual: bigint; readonly detail: string };

export type ConservationInput = {
  readonly funding: ReadonlyMap<Key, bigint>;
  readonly spot: ReadonlyMap<Key, bigint>;
  /** Net external movements: FUNDING from PostgreSQL, SPOT those UBSCore applied by P. */
  readonly external: ReadonlyMap<Key, bigint>;
  /** Transfers whose effects may differ between the cuts or that hold funds in flight. */
  readonly transfers: readonly TransferFacts[];
};

export type ConservationResult = {
  readonly accounts: number;
  readonly inFlight: ReadonlyMap<Key, bigint>;
  readonly differences: readonly Difference[];
};

export function checkConservation(input: ConservationInput): ConservationResult {
  const adjust = new Map<Key, bigint>();
  const inFlight = new Map<Key, bigint>();
  const differences: Difference[] = [];
  const add = (map: Map<Key, bigint>, key: Key, v: bigint) => map.set(key, (map.get(key) ?? 0n) + v);
  for (const t of input.transfers) {
    const key = keyOf(t.userId, t.asset);
    const judged = judge(t);
    if (judged.kind === 'violation') differences.push({ key, expected: 0n, actual: t.amount, detail: `${t.reqId}: ${judged.detail}` });
    else if (judged.kind === 'in_flight') add(inFlight, key, t.amount);
    else if (judged.kind === 'crossing') add(adjust, key, -t.amount);
  }
  const keys = new Set<Key>([...input.funding.keys(), ...input.spot.keys(), ...input.external.keys(), ...inFlight.keys()]);
  for (const key of keys) {
    const actual = (input.funding.get(key) ?? 0n) + (input.spot.get(key) ?? 0n) + (inFlight.get(key) ?? 0n) + (adjust.get(key) ?? 0n);
    const expected = input.external.get(key) ?? 0n;
    if (actual !== expected) differences.push({ key, expected, actual, detail: 'FUNDING + SPOT + in flight differs from net external movements' });
  }
  return { accounts: keys.size, inFlight, differences };
}

type Judgement = { kind: 'settled' } | { kind: 'in_flight' } | { kind: 'crossing' } | { kind: 'violation'; detail: string };

function judge(t: TransferFacts): Judgement {
  const f = t.funding;
  const s = t.spotByCut;
  if (t.fromFunding) {
    if (s.withdraw || f.deposit || s.refund) return { kind: 'violation', detail: 'an operation of the other direction was applied' };
    if (!f.withdraw) return s.deposit ? { kind: 'violation', detail: 'SPOT credited without a FUNDING debit' } : { kind: 'settled' };
    if (s.deposit && f.refund) return { kind: 'violation', detail: 'SPOT credited and FUNDING refunded' };
    return s.deposit || f.refund ? { kind: 'settled' } : { kind: 'in_flight' };
  }
  if (f.withdraw || s.deposit || f.refund) return { kind: 'violation', detail: 'an operation of the other direction was applied' };
  if (!s.withdraw) {
    if (!f.deposit) return s.refund ? { kind: 'violation', detail: 'SPOT refunded without a SPOT debit' } : { kind: 'settled' };
    // FUNDING credited in PostgreSQL's cut, SPOT debit not yet at P: it must have come after P.
    return t.spotWithdrawEver ? { kind: 'crossing' } : { kind: 'violation', detail: 'FUNDING credited without a SPOT debit' };
  }
  if (f.deposit && s.refund) return { kind: 'violation', detail: 'FUNDING credited and SPOT refunded' };
  return f.deposit || s.refund ? { kind: 'settled' } : { kind: 'in_flight' };
}
