// Proves that backups asked at the same moment never run together: exactly one is taken and
// the others are refused with BACKUP_IN_PROGRESS, whichever target each names (the check and the
// claim of the one backup slot happen before any wait).

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestService } from '../support/service.js';

test('four backups asked together: one is taken, the others are refused with BACKUP_IN_PROGRESS', async () => {
  const svc = await startTestService();
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-backup-race-'));
  try {
    const token = svc.adminToken();
    const ask = (name: string) => svc.call('POST', '/admin/v1/backup', { token, body: { dir: path.join(scratch, name) } });
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map(ask));
    const statuses = answers.map((a) => a.status).sort();
    assert.equal(statuses, [200, 409, 409, 409], JSON.stringify(answers.map((a) => a.body)));
    for (const a of answers) if (a.status === 409) assert.is(a.body.code, 'BACKUP_IN_PROGRESS');
  } finally {
    await svc.stop();
    await fs.rm(scratch, { recursive: true, force: true });
  }
});

test.run();
