// The conservation rule (spec 001 §7.2, MON-003) as a pure function over two cuts: UBSCore's,
// taken first at WAL position P, and PostgreSQL's, one repeatable-read snapshot taken after it.
// Per user and asset: FUNDING + SPOT + in flight = net external deposits − withdrawals.
//
// Each transfer is judged by its state in PostgreSQL's cut and by the effects each store had
// applied. A final state (and COMPENSATING) names exactly the effects it must have and must not
// have: a COMMITTED transfer without its SPOT credit, a ROLLED_BACK one without its refund, or a
// FAILED one that moved funds is a violation at once, never "in flight". A final state no longer
// changes, so for it UBSCore's answer after the cut ("ever applied") is decisive.
//
// The cuts are not simultaneous, so an unfinished transfer is judged by which effects each store
// had applied in its own cut. PostgreSQL's cut is later, so it may see a FUNDING effect whose SPOT
// counterpart UBSCore applied after P: a SPOT→FUNDING credit whose SPOT debit is after P is
// still in SPOT at P and is subtracted once ("crossing"); a FUNDING→SPOT debit whose SPOT credit
// is after P is simply in flight. Every other combination is either consistent or a violation.

import type { TransferStateName } from '../domain/fsm.js';

export type Key = string; // `${userId}/${asset}`

export const keyOf = (userId: bigint, asset: string): Key => `${userId}/${asset}`;

type Effects = { readonly withdraw: boolean; readonly deposit: boolean; readonly refund: boolean };

export type TransferFacts = {
  readonly reqId: string;
  readonly userId: bigint;
  readonly asset: string;
  readonly amount: bigint;
  readonly fromFunding: boolean;
  /** The transfer's state in PostgreSQL's cut. */
  readonly state: TransferStateName;
  /** Funding adapter effects in PostgreSQL's cut. */
  readonly funding: Effects;
  /** UBSCore effects applied at or before P. */
  readonly spotByCut: Effects;
  /** UBSCore effects applied at all, by the time of the follow-up query (after both cuts). */
  readonly spotEver: Effects;
};

export type Difference = { readonly key: Key; readonly expected: bigint; readonly actual: bigint; readonly detail: string };

type ConservationInput = {
  readonly funding: ReadonlyMap<Key, bigint>;
  readonly spot: ReadonlyMap<Key, bigint>;
  /** Net external movements: FUNDING from PostgreSQL, SPOT those UBSCore applied by P. */
  readonly external: ReadonlyMap<Key, bigint>;
  /** Transfers whose effects may differ between the cuts or that hold funds in flight. */
  readonly transfers: readonly TransferFacts[];
};

type ConservationResult = {
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
    if (actual !== expected)
      differences.push({ key, expected, actual, detail: 'FUNDING + SPOT + in flight differs from net external movements' });
  }
  // One order whatever order the reads returned rows in: by account, a transfer's own violation
  // before its account's sum (the sort is stable). Alerts and the admin answer then read alike.
  differences.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { accounts: keys.size, inFlight, differences };
}

type Judgement = { kind: 'settled' } | { kind: 'in_flight' } | { kind: 'crossing' } | { kind: 'violation'; detail: string };

const violation = (detail: string): Judgement => ({ kind: 'violation', detail });

function judge(t: TransferFacts): Judgement {
  const byEffects = t.fromFunding ? judgeFromFunding(t) : judgeFromSpot(t);
  if (byEffects.kind === 'violation') return byEffects;
  const byState = t.fromFunding ? stateRuleFromFunding(t) : stateRuleFromSpot(t);
  return byState ?? byEffects;
}

function judgeFromFunding(t: TransferFacts): Judgement {
  const f = t.funding;
  const s = t.spotByCut;
  if (s.withdraw || f.deposit || s.refund) return violation('an operation of the other direction was applied');
  if (!f.withdraw) return s.deposit ? violation('SPOT credited without a FUNDING debit') : { kind: 'settled' };
  if (s.deposit && f.refund) return violation('SPOT credited and FUNDING refunded');
  return s.deposit || f.refund ? { kind: 'settled' } : { kind: 'in_flight' };
}

function judgeFromSpot(t: TransferFacts): Judgement {
  const f = t.funding;
  const s = t.spotByCut;
  if (f.withdraw || s.deposit || f.refund) return violation('an operation of the other direction was applied');
  if (!s.withdraw) {
    if (!f.deposit) return s.refund ? violation('SPOT refunded without a SPOT debit') : { kind: 'settled' };
    // FUNDING credited in PostgreSQL's cut, SPOT debit not yet at P: it must have come after P.
    return t.spotEver.withdraw ? { kind: 'crossing' } : violation('FUNDING credited without a SPOT debit');
  }
  if (f.deposit && s.refund) return violation('FUNDING credited and SPOT refunded');
  return f.deposit || s.refund ? { kind: 'settled' } : { kind: 'in_flight' };
}

/** FUNDING → SPOT: what a final state (or COMPENSATING) requires; null when the state asks nothing more. */
function stateRuleFromFunding(t: TransferFacts): Judgement | null {
  const f = t.funding;
  const ever = t.spotEver;
  switch (t.state) {
    case 'COMMITTED':
      if (!f.withdraw) return violation('COMMITTED without its FUNDING debit');
      if (!ever.deposit) return violation('COMMITTED without its SPOT credit');
      if (f.refund) return violation('COMMITTED and refunded');
      return t.spotByCut.deposit ? { kind: 'settled' } : { kind: 'in_flight' };
    case 'ROLLED_BACK':
      if (ever.deposit) return violation('ROLLED_BACK but SPOT credited');
      if (f.withdraw && !f.refund) return violation('ROLLED_BACK without its FUNDING refund');
      if (!f.withdraw) return violation('ROLLED_BACK without a FUNDING debit to refund');
      return { kind: 'settled' };
    case 'FAILED':
      if (f.withdraw || f.refund) return violation('FAILED but the FUNDING side moved funds');
      if (ever.deposit) return violation('FAILED but SPOT credited');
      return { kind: 'settled' };
    case 'COMPENSATING':
      if (ever.deposit) return violation('COMPENSATING but SPOT credited');
      if (!f.withdraw) return violation('COMPENSATING without a FUNDING debit');
      return null;
    default:
      return null;
  }
}

/** SPOT → FUNDING: what a final state (or COMPENSATING) requires; null when the state asks nothing more. */
function stateRuleFromSpot(t: TransferFacts): Judgement | null {
  const f = t.funding;
  const ever = t.spotEver;
  const s = t.spotByCut;
  switch (t.state) {
    case 'COMMITTED':
      if (!ever.withdraw) return violation('COMMITTED without its SPOT debit');
      if (!f.deposit) return violation('COMMITTED without its FUNDING credit');
      if (ever.refund) return violation('COMMITTED and SPOT refunded');
      return s.withdraw ? { kind: 'settled' } : { kind: 'crossing' };
    case 'ROLLED_BACK':
      if (f.deposit) return violation('ROLLED_BACK but FUNDING credited');
      if (!ever.withdraw) return violation('ROLLED_BACK without a SPOT debit to refund');
      if (!ever.refund) return violation('ROLLED_BACK without its SPOT refund');
      // At P: the refund applied (settled), or the debit but not yet the refund (in flight), or neither.
      return s.refund || !s.withdraw ? { kind: 'settled' } : { kind: 'in_flight' };
    case 'FAILED':
      if (f.deposit) return violation('FAILED but FUNDING credited');
      if (ever.withdraw || ever.refund) return violation('FAILED but the SPOT side moved funds');
      return { kind: 'settled' };
    case 'COMPENSATING':
      if (f.deposit) return violation('COMPENSATING but FUNDING credited');
      if (!ever.withdraw) return violation('COMPENSATING without a SPOT debit');
      return null;
    default:
      return null;
  }
}
