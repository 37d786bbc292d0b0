// The transfer state machine as data: the 8 states of spec 001 §2.1 with their numeric IDs,
// and the transitions of 001 §2.2 and 003 §4.3. Pure: no I/O, no clocks.

export const STATE_IDS = {
  INIT: 0,
  SOURCE_PENDING: 10,
  SOURCE_DONE: 20,
  TARGET_PENDING: 30,
  COMMITTED: 40,
  FAILED: -10,
  COMPENSATING: -20,
  ROLLED_BACK: -30,
} as const;

export type TransferStateName = keyof typeof STATE_IDS;
type TransferStateId = (typeof STATE_IDS)[TransferStateName];

export const STATE_NAMES = Object.keys(STATE_IDS) as readonly TransferStateName[];

const NAME_BY_ID = new Map<number, TransferStateName>(STATE_NAMES.map((name) => [STATE_IDS[name], name]));

const TERMINAL_STATES: ReadonlySet<TransferStateName> = new Set(['COMMITTED', 'FAILED', 'ROLLED_BACK']);
/** The final states' ids, for SQL (`state <> ALL (...)`): a state renamed here leaves no literal behind. */
export const TERMINAL_STATE_IDS: readonly TransferStateId[] = [...TERMINAL_STATES].map((name) => STATE_IDS[name]);

/** Debited at the source and not yet credited at the target or refunded: funds in flight. */
export const FUNDS_IN_FLIGHT_STATES: ReadonlySet<TransferStateName> = new Set(['SOURCE_DONE', 'TARGET_PENDING', 'COMPENSATING']);

export function stateName(id: number): TransferStateName | null {
  return NAME_BY_ID.get(id) ?? null;
}

export function isTerminal(state: TransferStateName): boolean {
  return TERMINAL_STATES.has(state);
}

/** Every state that is not final, in STATE_IDS order: what a client is shown as PENDING. */
export const UNFINISHED_STATES: readonly TransferStateName[] = STATE_NAMES.filter((name) => !isTerminal(name));

/** Events, named after spec 003 §4.2; `_RETRY` and `ROLLBACK_FAIL` are the stay-and-retry loops. */
export const EVENTS = [
  'SOURCE_CALL',
  'SOURCE_OK',
  'SOURCE_FAIL',
  'SOURCE_RETRY',
  'TARGET_CALL',
  'TARGET_OK',
  'TARGET_FAIL',
  'TARGET_RETRY',
  'ROLLBACK_OK',
  'ROLLBACK_FAIL',
] as const;
export type TransferEvent = (typeof EVENTS)[number];

/**
 * What a history row stores for its event (migration 0014's transfer_events, which names them):
 * `CREATED` for a transfer's first row, then each event by its place in EVENTS.
 */
const EVENT_NAMES = ['CREATED', ...EVENTS] as const;
export const EVENT_CODES = Object.fromEntries(EVENT_NAMES.map((name, code) => [name, code])) as Readonly<
  Record<(typeof EVENT_NAMES)[number], number>
>;

/** The event a history row's code stands for, or null for a code no event has. */
export function eventName(code: number): string | null {
  return EVENT_NAMES[code] ?? null;
}

type Table = { readonly [S in TransferStateName]: Partial<Record<TransferEvent, TransferStateName>> };

/**
 * The transition table. INIT may also go straight to SOURCE_DONE or FAILED (003 §4.3) when the
 * source call shares one transaction with the state change; SOURCE_DONE straight to COMMITTED
 * or COMPENSATING likewise. Such a call whose outcome is unknown (a lost connection on COMMIT)
 * left the transfer where it was, or moved it: INIT and SOURCE_DONE therefore also have a
 * stay-and-retry loop. Terminal states accept nothing.
 */
const TRANSITIONS: Table = {
  INIT: { SOURCE_CALL: 'SOURCE_PENDING', SOURCE_OK: 'SOURCE_DONE', SOURCE_FAIL: 'FAILED', SOURCE_RETRY: 'INIT' },
  SOURCE_PENDING: { SOURCE_OK: 'SOURCE_DONE', SOURCE_FAIL: 'FAILED', SOURCE_RETRY: 'SOURCE_PENDING' },
  SOURCE_DONE: { TARGET_CALL: 'TARGET_PENDING', TARGET_OK: 'COMMITTED', TARGET_FAIL: 'COMPENSATING', TARGET_RETRY: 'SOURCE_DONE' },
  TARGET_PENDING: { TARGET_OK: 'COMMITTED', TARGET_FAIL: 'COMPENSATING', TARGET_RETRY: 'TARGET_PENDING' },
  COMPENSATING: { ROLLBACK_OK: 'ROLLED_BACK', ROLLBACK_FAIL: 'COMPENSATING' },
  COMMITTED: {},
  FAILED: {},
  ROLLED_BACK: {},
};

type TransitionResult =
  | { readonly ok: true; readonly to: TransferStateName }
  | { readonly ok: false; readonly reason: 'TERMINAL_STATE' | 'INVALID_TRANSITION' };

/** The state `event` leads to from `from`, or a refusal for every pair not in the table. */
export function transition(from: TransferStateName, event: TransferEvent): TransitionResult {
  const to = TRANSITIONS[from][event];
  if (to !== undefined) return { ok: true, to };
  return { ok: false, reason: isTerminal(from) ? 'TERMINAL_STATE' : 'INVALID_TRANSITION' };
}

/** Asserts a transition the driver is about to persist; a refusal here is a programmer error. */
export function assertTransition(from: TransferStateName, event: TransferEvent, to: TransferStateName): void {
  const result = transition(from, event);
  if (!result.ok || result.to !== to) {
    throw new Error(`FSM violation: ${from} --${event}--> ${to} is not in the table`);
  }
}
