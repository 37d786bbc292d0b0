// Proves the console's last-minute pace: counts and p99 over exactly the last PULSE_WINDOW_S seconds, old slots forgotten, accepted only for 200/202.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Pulse, PULSE_WINDOW_S } from '../../src/metrics/pulse.js';

function clocked(): { pulse: Pulse; at: (s: number) => void } {
  let now = 1_000_000_000;
  return { pulse: new Pulse(() => now), at: (s) => (now = 1_000_000_000 + s * 1000) };
}

test('an empty ring answers zero and no p99', () => {
  assert.equal(new Pulse().summary(), {
    window_s: PULSE_WINDOW_S,
    requests: 0,
    accepted: 0,
    transfers_per_s: '0.0',
    p99_ms: null,
    p99_above_max: false,
  });
});

test('p99 is the bound of the bucket holding the 99th percentile; 200 and 202 are accepted, others not', () => {
  const { pulse } = clocked();
  for (let i = 0; i < 99; i++) pulse.record(3, 200);
  pulse.record(400, 202);
  const s = pulse.summary();
  assert.equal([s.requests, s.accepted, s.p99_ms, s.p99_above_max], [100, 100, 5, false]);
  pulse.record(9_000, 422);
  pulse.record(9_000, 503);
  const t = pulse.summary();
  assert.equal([t.requests, t.accepted, t.p99_ms, t.p99_above_max], [102, 100, 5000, true]);
});

test('the window is the last PULSE_WINDOW_S seconds: an older slot is forgotten, also when its index is reused', () => {
  const { pulse, at } = clocked();
  at(0);
  for (let i = 0; i < 120; i++) pulse.record(1, 200);
  at(PULSE_WINDOW_S - 1);
  pulse.record(1, 200);
  assert.equal([pulse.summary().accepted, pulse.summary().transfers_per_s], [121, '2.0']);
  at(PULSE_WINDOW_S);
  assert.is(pulse.summary().accepted, 1, 'second 0 left the window');
  pulse.record(1, 200);
  assert.is(pulse.summary().accepted, 2, 'its slot reused, not added to');
  at(10 * PULSE_WINDOW_S);
  assert.is(pulse.summary().requests, 0);
});

test.run();
