// Proves the writer the coordinator shards share (more shards must not split
// PostgreSQL's batches): a shard's write crosses to shard 0's batched writer and comes back as
// its own result (a Date still a Date, a re-run still `exists`); writes of two shards in one
// turn share that writer's statements; a database error comes back with its SQLSTATE, so the
// Funding adapter still tells a refusal from an unknown outcome; a closed port fails every
// waiting and every later write as a lost connection; a malformed message is answered, never dropped.

import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LINK_CLOSED_CODE, SharedWriteError, WriteLink } from '../../actors/coordinator/write-link.js';
import { serveWrites } from '../../actors/coordinator/write-serve.js';
import type { SharedWriteAnswers } from '../../actors/protocol.js';
import type { Sql } from '../../src/db/sql.js';
import { TransferWrites, type WriteItem } from '../../src/db/transfer-writes.js';
import { startLayers, type Layers } from '../support/layers.js';
import { balances, createAndDebit, newTransfer, newUserId, seed } from '../support/ledger.js';

const COIN = 10n ** 8n;
let L: Layers;
const ports: MessagePort[] = [];

test.before(async () => {
  L = await startLayers();
});

test.after(async () => {
  for (const port of ports) port.close();
  await L.stop();
});

/** A link served by `writes` on a channel of its own; `malformed` collects what the link reports. */
function linkTo(writes: TransferWrites, malformed: string[] = []): WriteLink {
  const channel = new MessageChannel();
  ports.push(channel.port1, channel.port2);
  serveWrites(channel.port1, writes);
  return new WriteLink(channel.port2, (detail) => malformed.push(detail));
}

/** The same sql, counting the statements made through it. */
function counting(sql: Sql): { sql: Sql; statements: () => number } {
  let n = 0;
  const wrapped = new Proxy(sql, {
    apply(target, self, args) {
      n += 1;
      return Reflect.apply(target, self, args);
    },
  });
  return { sql: wrapped, statements: () => n };
}

test("a write through the link is the writer's own: moved to TARGET_PENDING at a Date, debited once, and a re-run answers exists", async () => {
  const link = linkTo(new TransferWrites(L.sql, { batchMax: 250 }));
  const user = newUserId();
  await seed(L, user, 'USDT', 10n * COIN, 0n);
  const item = createAndDebit(newTransfer(user, 'FUNDING', 'USDT', 3n * COIN));
  const first = await link.write(item);
  assert.ok(first.kind === 'moved', JSON.stringify(first));
  assert.is(first.state, 'TARGET_PENDING');
  assert.ok(first.at instanceof Date, 'the moment crossed as a Date');
  assert.type(first.transferId, 'string');
  assert.equal(first.op, { outcome: 'APPLIED' });
  assert.is((await link.write(item)).kind, 'exists', 'a re-run finds the creation, as through the writer itself');
  assert.is((await balances(L, user, 'USDT')).funding, 7n * COIN, 'debited once');
});

test('two shards writing in the same turn share the writer: 8 creations in at most 2 statements, each answered its own', async () => {
  const { sql, statements } = counting(L.sql);
  const shared = new TransferWrites(sql, { batchMax: 250 });
  const links = [linkTo(shared), linkTo(shared)];
  const users = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const user = newUserId();
      await seed(L, user, 'USDT', 10n * COIN, 0n);
      return user;
    }),
  );
  const transfers = users.map((user, i) => newTransfer(user, 'FUNDING', 'USDT', BigInt(i + 1) * COIN));
  const before = statements();
  const results = await Promise.all(transfers.map((t, i) => (links[i % 2] as WriteLink).write(createAndDebit(t))));
  assert.ok(statements() - before <= 2, `${statements() - before} statements for 8 writes of two shards`);
  for (const r of results) assert.ok(r.kind === 'moved' && r.state === 'TARGET_PENDING', JSON.stringify(r));
  for (const [i, user] of users.entries()) assert.is((await balances(L, user, 'USDT')).funding, 10n * COIN - BigInt(i + 1) * COIN);
});

test('a database error comes back with its SQLSTATE, the same as the writer itself throws', async () => {
  const direct = new TransferWrites(L.sql, { batchMax: 250 });
  const link = linkTo(direct);
  // An amount past bigint: PostgreSQL refuses the row (22003, which the Funding adapter reads as a refusal).
  const item = (): WriteItem => ({
    kind: 'create',
    transfer: newTransfer(newUserId(), 'SPOT', 'USDT', 2n ** 63n),
    op: null,
    paths: { ok: [{ event: 'SOURCE_CALL', to: 'SOURCE_PENDING' }], ko: [{ event: 'SOURCE_FAIL', to: 'FAILED' }] },
    code: null,
    checkFundingTarget: false,
    dueNow: false,
  });
  const own = await direct.write(item()).then(
    () => null,
    (error: unknown) => error as { code?: unknown; message: string },
  );
  assert.ok(own !== null && typeof own.code === 'string', `the writer itself threw a database error: ${String(own?.message)}`);
  const crossed = await link.write(item()).then(
    () => null,
    (error: unknown) => error,
  );
  assert.ok(crossed instanceof SharedWriteError, `the link threw ${String(crossed)}`);
  assert.is(crossed.code, own.code, 'the same SQLSTATE');
  assert.is(crossed.code, '22003');
  assert.is(crossed.message, own.message);
});

test('a closed port fails the waiting write and every later one as a lost connection', async () => {
  const channel = new MessageChannel();
  ports.push(channel.port1);
  // Nothing serves port1: the write waits until the port closes.
  const link = new WriteLink(channel.port2, () => undefined);
  const waiting = link.write(createAndDebit(newTransfer(newUserId(), 'FUNDING', 'USDT', COIN))).then(
    () => null,
    (error: unknown) => error,
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  channel.port1.close();
  const error = await waiting;
  assert.ok(error instanceof SharedWriteError && error.code === LINK_CLOSED_CODE, `waiting write: ${String(error)}`);
  const later = await link.write(createAndDebit(newTransfer(newUserId(), 'FUNDING', 'USDT', COIN))).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(later instanceof SharedWriteError && later.code === LINK_CLOSED_CODE, `later write: ${String(later)}`);
});

test('a malformed request is answered with a failure for each id, and a malformed answer is reported', async () => {
  const channel = new MessageChannel();
  ports.push(channel.port1, channel.port2);
  serveWrites(channel.port1, new TransferWrites(L.sql, { batchMax: 250 }));
  const answered = new Promise<SharedWriteAnswers>((resolve) => channel.port2.once('message', resolve));
  channel.port2.postMessage({ kind: 'writes.request', ids: [7, 8], items: [] });
  const answer = await answered;
  assert.equal(answer.ids, [7, 8]);
  assert.ok(
    answer.outcomes.every((o) => o.kind === 'failed' && /2 ids and 0 writes/.test(o.message)),
    JSON.stringify(answer),
  );

  const other = new MessageChannel();
  ports.push(other.port1, other.port2);
  const malformed: string[] = [];
  new WriteLink(other.port2, (detail) => malformed.push(detail));
  other.port1.postMessage({ kind: 'writes.answers', ids: [1], outcomes: [] });
  other.port1.postMessage({ kind: 'writes.answers', ids: [99], outcomes: [{ kind: 'failed', message: 'x', code: null }] });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(malformed.length, 2, JSON.stringify(malformed));
  assert.match(malformed[1] ?? '', 'no write waits for');
});

test.run();
