// Proves oncePerTurn runs its flush once per event-loop turn, after the turn's microtasks, however often it is asked, and that a flush may ask for the next turn's.
// test-runner: no-postgres

import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { oncePerTurn } from '../../src/turn-flush.js';

test('requests of one turn, microtasks included, share one flush', async () => {
  let flushes = 0;
  const request = oncePerTurn(() => flushes++);
  request();
  request();
  await Promise.resolve();
  request();
  assert.is(flushes, 0, 'nothing runs inside the turn');
  await nextTurn();
  assert.is(flushes, 1);
  await nextTurn();
  assert.is(flushes, 1, 'no request, no flush');
});

test('a flush may ask for the next turn', async () => {
  let flushes = 0;
  const request: () => void = oncePerTurn(() => {
    flushes++;
    if (flushes < 3) request();
  });
  request();
  for (let i = 0; i < 5; i++) await nextTurn();
  assert.is(flushes, 3);
});

test.run();
