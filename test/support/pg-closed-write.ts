// A child process for test/ownership/pg-driver-patch.test.ts: a postgres.js transaction whose backend is
// ended while a statement runs. postgres 3.4.9 then writes its ROLLBACK on the closed connection;
// unpatched, that write throws from an Immediate (socket null, porsager/postgres#1208), which no
// caller can catch and which ends the process. Patched, the transaction rejects with the
// connection's error and the process lives. Prints the outcome, then `alive`.

import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';

const url = process.argv[2];
if (url === undefined) throw new Error('usage: pg-closed-write.js <database url>');
const sql = postgres(url, { max: 1, onnotice: () => undefined });
const killer = postgres(url, { max: 1, onnotice: () => undefined });
const outcome = sql
  .begin(async (tx) => {
    await tx`SELECT pg_backend_pid()`;
    await tx`SELECT pg_sleep(5)`;
  })
  .then(
    () => 'committed',
    (error: unknown) => `rejected ${(error as { code?: string }).code ?? String(error)}`,
  );
// Ends the transaction's backend while pg_sleep runs.
for (let i = 0; i < 100; i++) {
  const [row] = await killer<{ n: number }[]>`
    SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(5)' AND pid <> pg_backend_pid()`;
  if ((row?.n ?? 0) > 0) break;
  await sleep(20);
}
process.stdout.write(`${await outcome}\n`);
// Room for a write scheduled on the closed connection to run.
await sleep(200);
await killer.end({ timeout: 1 });
await sql.end({ timeout: 1 });
process.stdout.write('alive\n');
