// Proves the failover drill's schedule (test/failover/schedule.ts): two cycles are a SIGKILL and a SIGSTOP (CI's cheap run), five run every kind once, eight every kind with the SIGKILL deleting its DATA_DIR on alternate runs; FAILOVER_KINDS picks the rotation in its order, and an unknown kind, or a PostgreSQL fault on a DATABASE_URL server, is refused.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CYCLE_KINDS, rotation, scheduled } from '../failover/schedule.js';

const plan = (kinds: ReturnType<typeof rotation>, cycles: number) =>
  Array.from({ length: cycles }, (_, i) => {
    const { kind, wipe } = scheduled(kinds, i + 1);
    return wipe ? `${kind}+wipe` : kind;
  });

test('the default rotation: 2 cycles are a SIGKILL (DATA_DIR deleted) and a SIGSTOP; 5 hold every kind; 8 a second round', () => {
  const kinds = rotation(undefined, true);
  assert.equal(plan(kinds, 2), ['sigkill+wipe', 'sigstop']);
  assert.equal(new Set(plan(kinds, 5).map((k) => k.replace('+wipe', ''))), new Set(CYCLE_KINDS));
  assert.equal(plan(kinds, 8), [
    'sigkill+wipe',
    'sigstop',
    'stale-primary',
    'pg-restart',
    'pg-pause',
    'sigkill',
    'sigstop',
    'stale-primary',
  ]);
});

test('on a DATABASE_URL server the PostgreSQL faults leave the default rotation', () => {
  assert.equal(rotation(undefined, false), ['sigkill', 'sigstop', 'stale-primary']);
  assert.equal(rotation('  ', false), ['sigkill', 'sigstop', 'stale-primary']);
});

test('FAILOVER_KINDS picks the rotation in its order; a sigkill wipes on its 1st, 3rd, ... run', () => {
  const kinds = rotation('pg-pause, sigkill', true);
  assert.equal(plan(kinds, 5), ['pg-pause', 'sigkill+wipe', 'pg-pause', 'sigkill', 'pg-pause']);
  assert.equal(plan(rotation('stale-primary', true), 2), ['stale-primary', 'stale-primary']);
});

test('FAILOVER_KINDS refuses an unknown kind, and a PostgreSQL fault on a DATABASE_URL server', () => {
  assert.throws(() => rotation('sigkill,restart', true), /unknown restart/);
  assert.throws(() => rotation('sigkill,pg-restart', false), /pg-restart .*DATABASE_URL/);
  assert.throws(() => rotation('pg-pause', false), /pg-pause .*DATABASE_URL/);
});

test.run();
