// Proves, with a short restart-from-WAL drill (3 SIGKILLs of the whole service under load), that recovery leaves every transfer terminal and every balance exact (INV-004, FND-004 with real processes).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runDrill } from '../drill/drill.js';

test('INV-004 / FND-004: three SIGKILLs under load: all terminal, funds conserved per user and asset, no double effect, every seen COMMITTED kept', async () => {
  const report = await runDrill({ cycles: 3, users: 8, concurrency: 8, killAfterMsMin: 400, killAfterMsMax: 1_200, log: () => undefined });
  assert.equal(report.violations, []);
  assert.is(report.recoveryMs.length, 3);
  assert.ok(report.transfers > 0, 'the drill moved funds');
  assert.ok(report.committedSeenByClients > 0);
});

test.run();
