// Proves the FSM module holds exactly the spec's states, IDs and transitions, and refuses every other (state, event) pair.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EVENTS, STATE_IDS, STATE_NAMES, transition, isTerminal, assertTransition, stateName } from '../../src/domain/fsm.js';

test('the 8 states carry the numeric IDs of spec 001 §2.1', () => {
  assert.equal(STATE_IDS, {
    INIT: 0,
    SOURCE_PENDING: 10,
    SOURCE_DONE: 20,
    TARGET_PENDING: 30,
    COMMITTED: 40,
    FAILED: -10,
    COMPENSATING: -20,
    ROLLED_BACK: -30,
  });
  for (const name of STATE_NAMES) assert.is(stateName(STATE_IDS[name]), name);
  assert.is(stateName(5), null);
});

test('terminal states are exactly COMMITTED, FAILED and ROLLED_BACK', () => {
  assert.equal(STATE_NAMES.filter(isTerminal).sort(), ['COMMITTED', 'FAILED', 'ROLLED_BACK']);
});

// Written out independently of the module's table, from 001 §2.2 and 003 §4.3, plus the two
// stay loops of a call that shares the move's transaction and whose outcome is unknown.
const ALLOWED: ReadonlyArray<readonly [string, string, string]> = [
  ['INIT', 'SOURCE_CALL', 'SOURCE_PENDING'],
  ['INIT', 'SOURCE_OK', 'SOURCE_DONE'],
  ['INIT', 'SOURCE_FAIL', 'FAILED'],
  ['INIT', 'SOURCE_RETRY', 'INIT'],
  ['SOURCE_PENDING', 'SOURCE_OK', 'SOURCE_DONE'],
  ['SOURCE_PENDING', 'SOURCE_FAIL', 'FAILED'],
  ['SOURCE_PENDING', 'SOURCE_RETRY', 'SOURCE_PENDING'],
  ['SOURCE_DONE', 'TARGET_CALL', 'TARGET_PENDING'],
  ['SOURCE_DONE', 'TARGET_OK', 'COMMITTED'],
  ['SOURCE_DONE', 'TARGET_FAIL', 'COMPENSATING'],
  ['SOURCE_DONE', 'TARGET_RETRY', 'SOURCE_DONE'],
  ['TARGET_PENDING', 'TARGET_OK', 'COMMITTED'],
  ['TARGET_PENDING', 'TARGET_FAIL', 'COMPENSATING'],
  ['TARGET_PENDING', 'TARGET_RETRY', 'TARGET_PENDING'],
  ['COMPENSATING', 'ROLLBACK_OK', 'ROLLED_BACK'],
  ['COMPENSATING', 'ROLLBACK_FAIL', 'COMPENSATING'],
];

test('every (state, event) pair: allowed ones lead where the spec says, all others are refused', () => {
  let checked = 0;
  for (const state of STATE_NAMES) {
    for (const event of EVENTS) {
      const row = ALLOWED.find(([s, e]) => s === state && e === event);
      const result = transition(state, event);
      if (row !== undefined) {
        assert.equal(result, { ok: true, to: row[2] }, `${state} --${event}-->`);
      } else {
        assert.is(result.ok, false, `${state} --${event}--> must be refused`);
        if (!result.ok) assert.is(result.reason, isTerminal(state) ? 'TERMINAL_STATE' : 'INVALID_TRANSITION');
      }
      checked += 1;
    }
  }
  assert.is(checked, STATE_NAMES.length * EVENTS.length);
});

test('funds never skip a state: no event leads from a terminal state, nor back to INIT from another state', () => {
  for (const state of STATE_NAMES) {
    for (const event of EVENTS) {
      const result = transition(state, event);
      if (result.ok && state !== 'INIT') assert.is.not(result.to, 'INIT');
      if (isTerminal(state)) assert.is(result.ok, false);
    }
  }
});

test('assertTransition throws on a transition outside the table (a programmer error)', () => {
  assert.throws(() => assertTransition('INIT', 'TARGET_OK', 'COMMITTED'), /FSM violation/);
  assert.throws(() => assertTransition('SOURCE_PENDING', 'SOURCE_OK', 'COMMITTED'), /FSM violation/);
  assertTransition('TARGET_PENDING', 'TARGET_OK', 'COMMITTED');
});

test.run();
