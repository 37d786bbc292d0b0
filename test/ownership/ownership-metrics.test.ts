// Proves operators see the ownership: a primary's and a standby's GET /metrics carry
// the role, epoch, lease, standby lag, ledger_owner and the SPOT log's reach and size; a standby
// that takes over counts its promotion, its epoch is the next one, and GET /admin/v1/ownership
// says so; and each series is written from the values it is given, every label value 0 or 1.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setOwnershipMetrics } from '../../src/services/ownership-metrics.js';
import { Registry } from '../../src/metrics/registry.js';
import type { LedgerStatus } from '../../src/ownership/status.js';
import { cleanupAll, createHarness, sleep, type ChildService } from '../support/process.js';
import { parseMetrics, type Scrape } from '../support/prometheus.js';

async function scrape(svc: ChildService): Promise<Scrape> {
  const res = await fetch(`${svc.base}/metrics`);
  assert.is(res.status, 200, `GET /metrics on ${svc.base}`);
  return parseMetrics(await res.text());
}

/** Asks `probe` every 50 ms until it answers (a refused connection is no answer yet), for up to 30 s. */
async function until<T>(what: string, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    assert.ok(Date.now() < deadline, `${what}: not within 30 s`);
    await sleep(50);
  }
}

const LEDGER: LedgerStatus = {
  epoch: 7,
  owner: 'transfer-1-abcdef@host',
  promotedAt: new Date(1_700_000_000_000),
  leaseUntil: null,
  logLastSeq: 42,
  archivedThroughSeq: 30,
  bytes: { spot_log: 8192, spot_snapshots: 16384, spot_processed: 24576 },
};

test('each series is written from its value: a standby 12 records and 1.5 s behind, no epoch, no lease', async () => {
  const registry = new Registry();
  const lag = { records: 12, ms: 1500 };
  setOwnershipMetrics(registry, { role: 'standby', promoted: false, epoch: null, leaseState: null, leaseLeftMs: 0, lag }, LEDGER);
  const m = parseMetrics(await registry.prom.metrics());
  const expect: [string, number][] = [
    ['transfer_owner_role{role="standby"}', 1],
    ['transfer_owner_role{role="primary"}', 0],
    ['transfer_owner_epoch', 0],
    ['transfer_owner_lease_state{state="proven"}', 0],
    ['transfer_owner_lease_state{state="standing-by"}', 0],
    ['transfer_owner_lease_state{state="lapsed"}', 0],
    ['transfer_owner_lease_left_seconds', 0],
    ['transfer_owner_promotions_total', 0],
    ['transfer_standby_lag_records', 12],
    ['transfer_standby_lag_seconds', 1.5],
    ['transfer_ledger_owner_epoch', 7],
    ['transfer_ledger_owner_promoted_timestamp_seconds', 1_700_000_000],
    ['transfer_spot_log_last_seq', 42],
    ['transfer_spot_log_archived_seq', 30],
    ['transfer_spot_log_bytes{table="spot_log"}', 8192],
    ['transfer_spot_log_bytes{table="spot_snapshots"}', 16384],
    ['transfer_spot_log_bytes{table="spot_processed"}', 24576],
  ];
  assert.equal(
    expect.map(([series]) => [series, m.get(series)]),
    expect,
  );
});

test('a primary and its standby show their roles, the lease, the log; the standby that takes over counts its promotion', async () => {
  const h = await createHarness();
  const standbyDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-standby-data-'));
  try {
    const primary = await h.start({ LEASE_MS: '1500', LEASE_RENEW_MS: '300' });
    const body = { user_id: '5', account: 'SPOT', asset: 'USDT', amount: '10', ref: 'own-1' };
    assert.is((await primary.call('POST', '/admin/v1/deposit', { token: h.adminToken(), body })).status, 200);
    const standby = await h.start({
      ROLE: 'standby',
      DATA_DIR: standbyDir,
      STANDBY_POLL_MS: '20',
      LEASE_MS: '1500',
      LEASE_RENEW_MS: '300',
    });
    const [row] = await h.sql<{ epoch: string; last: string }[]>`
      SELECT epoch::text AS epoch, (SELECT max(last_seq) FROM spot_log)::text AS last FROM ledger_owner`;
    const epoch = Number(row?.epoch);
    const lastSeq = Number(row?.last);
    assert.ok(lastSeq >= 1, 'the SPOT deposit is in spot_log');

    const p = await scrape(primary);
    assert.equal(
      [p.get('transfer_owner_role{role="primary"}'), p.get('transfer_owner_role{role="standby"}'), p.get('transfer_owner_epoch')],
      [1, 0, epoch],
    );
    assert.is(p.get('transfer_owner_lease_state{state="proven"}'), 1);
    const left = p.get('transfer_owner_lease_left_seconds') ?? 0;
    assert.ok(left > 0 && left <= 1.5, `lease left ${left} s`);
    assert.equal(
      [p.get('transfer_ledger_owner_epoch'), p.get('transfer_spot_log_last_seq'), p.get('transfer_owner_promotions_total')],
      [epoch, lastSeq, 0],
    );
    assert.ok((p.get('transfer_spot_log_bytes{table="spot_log"}') ?? 0) > 0);

    // The standby follows: its lag reaches 0 with the deposit applied, and it holds no epoch.
    const s = await until('the standby caught up', async () => {
      const m = await scrape(standby);
      return m.get('transfer_standby_lag_records') === 0 && m.get('transfer_spot_log_last_seq') === lastSeq ? m : null;
    });
    assert.equal(
      [s.get('transfer_owner_role{role="standby"}'), s.get('transfer_owner_role{role="primary"}'), s.get('transfer_owner_epoch')],
      [1, 0, 0],
    );
    assert.equal(
      [s.get('transfer_owner_lease_state'), s.get('transfer_standby_lag_seconds'), s.get('transfer_ledger_owner_epoch')],
      [0, 0, epoch],
    );
    assert.ok(
      s.samples.every((x) => x.labels.thread === 'main'),
      'labelled thread="main" as the primary is',
    );

    // The primary stops: the standby takes over, on the same port.
    await primary.stop();
    const promoted = await until('the standby took over', async () =>
      (await standby.call('GET', '/readyz')).status === 200 ? scrape(standby) : null,
    );
    assert.equal([promoted.get('transfer_owner_role{role="primary"}'), promoted.get('transfer_owner_promotions_total')], [1, 1]);
    assert.equal([promoted.get('transfer_owner_epoch'), promoted.get('transfer_ledger_owner_epoch')], [epoch + 1, epoch + 1]);
    assert.ok((promoted.get('transfer_ledger_owner_promoted_timestamp_seconds') ?? 0) * 1000 > Date.now() - 60_000);
    const view = await standby.call('GET', '/admin/v1/ownership', { token: h.adminToken() });
    assert.is(view.status, 200);
    assert.equal([view.body.role, view.body.promoted, view.body.epoch], ['primary', true, epoch + 1]);
    assert.is((view.body.spot_log as { last_seq: number }).last_seq, lastSeq);
    await standby.stop();
  } finally {
    await h.cleanup();
    await fs.rm(standbyDir, { recursive: true, force: true });
  }
});

test.after(cleanupAll);

test.run();
