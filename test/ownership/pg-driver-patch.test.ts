// Proves patches/postgres+3.4.9.patch is applied and holds: a transaction whose connection closes
// while a statement runs (the server restarted or crashed, a network drop) rejects with the
// connection's error, and the process lives. Unpatched, postgres.js 3.4.9 writes the transaction's
// ROLLBACK on the closed connection, and that write throws from an Immediate where no caller can
// catch it (porsager/postgres#1208): a killed PostgreSQL ended the whole service that way, seen
// in a CI run of pg-restart.test.ts. Run in a child process, since the defect ends its process.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTestDatabase } from '../support/database.js';

const run = promisify(execFile);

test('a transaction whose connection closes mid-statement rejects with CONNECTION_CLOSED, and the process lives', async () => {
  const db = await createTestDatabase();
  try {
    const child = fileURLToPath(new URL('../support/pg-closed-write.js', import.meta.url));
    const { stdout } = await run(process.execPath, [child, db.url], { timeout: 30_000 }).catch(
      (error: { code?: number; stderr?: string }) => {
        throw new Error(`the child ended with ${error.code}: ${error.stderr?.slice(-1_000)}`);
      },
    );
    assert.is(stdout, 'rejected CONNECTION_CLOSED\nalive\n');
  } finally {
    await db.drop();
  }
});

test.run();
