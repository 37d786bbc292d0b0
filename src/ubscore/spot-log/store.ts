// UBSCore's log in PostgreSQL: what the SPOT ledger needs to exist without the disk of the machine
// that wrote it. Three tables (migration 0010):
//
// - spot_log: one row per WAL block (wal/block.ts), the bytes exactly as LMDB holds them, keyed
//   by the block's last seq. Written by the owner's UBSCore in the same group commit as LMDB's,
//   on a connection fenced by the owner epoch (src/db/migrations/repeatable/owner_fence.sql).
// - spot_snapshots: UBSCore's snapshots (wal/snapshot.ts), header as part 0, chunks 1..n.
// - spot_processed: the processed-set entries of the blocks archived out of spot_log, so that a
//   rebuild from PostgreSQL still knows every (req_id, op) ever applied (rule 8).
//
// Every write here is idempotent: a block or snapshot already stored with the same bytes is
// success (a retried commit whose answer was lost); the same key with other bytes is a conflict,
// which no retry can mend (two writers, or a damaged row) and which stops the writer. spot_log is a
// chain (migration 0012): a block that does not continue the one before it, or the archive mark,
// is refused by the database at commit, and comes back as SpotLogGap, which stops the writer too.

import type { Sql, Tx } from '../../db/sql.js';

/** One stored block: its bytes carry their own header and checksums (wal/block.ts). */
export type LogBlock = { readonly firstSeq: number; readonly lastSeq: number; readonly bytes: Buffer };

/** A snapshot as stored: its header and chunks, exactly as wal/snapshot.ts encoded them. */
export type StoredSnapshot = { readonly seq: number; readonly header: Buffer; readonly chunks: readonly Buffer[] };

/** What PostgreSQL's log covers: blocks from `firstBlockSeq` to `lastBlockSeq`, everything through `archived` archived. */
export type PgRange = {
  readonly archived: number;
  readonly firstBlockSeq: number | null;
  readonly lastBlockSeq: number | null;
  /** The greater of the newest block's last seq and the archive mark. */
  readonly last: number;
};

/** One archived processed-set entry: its key (wal/processed-key.ts) and the operation's own record. */
export type ArchivedEntry = { readonly key: Buffer; readonly record: Buffer; readonly seq: number };

/** The same key holds other bytes: two writers, or a damaged row. Never retried. */
export class SpotLogConflict extends Error {
  override readonly name = 'SpotLogConflict';
}

/**
 * The database refused a block that does not continue spot_log's chain (SQLSTATE LF002, migration
 * 0012): a hole (PostgreSQL lost its tail) or a fork (another writer's blocks). Never retried.
 */
export class SpotLogGap extends Error {
  override readonly name = 'SpotLogGap';
}

/** Whether `error` is the chain check of migration 0012 refusing a block. */
export function isChainBroken(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'LF002';
}

// The fence's refusal (src/db/fence.ts), named here too for the SPOT log's writers.
export { isFenced } from '../../db/fence.js';

type BlockRow = { first_seq: bigint; last_seq: bigint; block: Buffer };

function seqOf(value: bigint | number | null): number {
  const n = Number(value ?? 0);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`spot log: seq ${String(value)} is out of range`);
  return n;
}

export class SpotLogStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Stores the blocks of one group commit at `epoch`, in one transaction. A block already stored
   * with the same bytes counts as stored; with other bytes it throws SpotLogConflict; one that does
   * not continue the chain, SpotLogGap.
   */
  async append(epoch: number, blocks: readonly LogBlock[]): Promise<void> {
    if (blocks.length === 0) return;
    const inserted = await chainChecked(() =>
      blocks.length === 1
        ? this.insert(this.sql, epoch, blocks[0] as LogBlock)
        : this.sql.begin(async (tx) => {
            let count = 0;
            for (const block of blocks) count += await this.insert(tx as unknown as Sql, epoch, block);
            return count;
          }),
    );
    if (inserted === blocks.length) return;
    const stored = await this.sql<{ last_seq: bigint; block: Buffer }[]>`
      SELECT last_seq, block FROM spot_log WHERE last_seq = ANY(${blocks.map((b) => b.lastSeq)}::bigint[])`;
    const bySeq = new Map(stored.map((row) => [seqOf(row.last_seq), row.block]));
    for (const block of blocks) {
      const there = bySeq.get(block.lastSeq);
      if (there === undefined) throw new Error(`spot log: the block ending at seq ${block.lastSeq} was neither stored nor found`);
      if (!there.equals(block.bytes))
        throw new SpotLogConflict(`spot log: the block ending at seq ${block.lastSeq} is stored with other bytes`);
    }
  }

  private async insert(sql: Sql, epoch: number, block: LogBlock): Promise<number> {
    const rows = await sql`
      INSERT INTO spot_log (last_seq, first_seq, epoch, block)
      VALUES (${block.lastSeq}::bigint, ${block.firstSeq}::bigint, ${epoch}::bigint, ${block.bytes})
      ON CONFLICT (last_seq) DO NOTHING RETURNING last_seq`;
    return rows.length;
  }

  /** The last seq PostgreSQL holds: the newest block's, else how far the log was archived, else 0. */
  async lastSeq(): Promise<number> {
    const [row] = await this.sql<{ last: bigint | null }[]>`
      SELECT GREATEST((SELECT max(last_seq) FROM spot_log), (SELECT archived_through_seq FROM spot_log_state)) AS last`;
    return seqOf(row?.last ?? null);
  }

  /**
   * The range PostgreSQL's log covers, read in one statement: how far it was archived, the first
   * seq of its lowest block and the last seq of its newest (null without a block), and its last seq.
   */
  async range(): Promise<PgRange> {
    const [row] = await this.sql<{ archived: bigint; first: bigint | null; last: bigint | null }[]>`
      SELECT (SELECT archived_through_seq FROM spot_log_state) AS archived,
             (SELECT first_seq FROM spot_log ORDER BY last_seq LIMIT 1) AS first,
             (SELECT max(last_seq) FROM spot_log) AS last`;
    const archived = seqOf(row?.archived ?? null);
    const firstBlockSeq = row?.first == null ? null : seqOf(row.first);
    const lastBlockSeq = row?.last == null ? null : seqOf(row.last);
    return { archived, firstBlockSeq, lastBlockSeq, last: Math.max(archived, lastBlockSeq ?? 0) };
  }

  /** Whether PostgreSQL holds any of the SPOT ledger: a block, a snapshot or an archived entry. */
  async holdsLedger(): Promise<boolean> {
    const [row] = await this.sql<{ held: boolean }[]>`
      SELECT EXISTS (SELECT 1 FROM spot_log) OR EXISTS (SELECT 1 FROM spot_snapshots)
          OR EXISTS (SELECT 1 FROM spot_processed) OR (SELECT archived_through_seq > 0 FROM spot_log_state) AS held`;
    return row?.held === true;
  }

  /** Up to `limit` blocks holding seqs from `fromSeq` on, in order (the first may start before `fromSeq`). */
  async read(fromSeq: number, limit: number): Promise<LogBlock[]> {
    const rows = await this.sql<BlockRow[]>`
      SELECT first_seq, last_seq, block FROM spot_log WHERE last_seq >= ${fromSeq}::bigint ORDER BY last_seq LIMIT ${limit}`;
    return rows.map((row) => ({ firstSeq: seqOf(row.first_seq), lastSeq: seqOf(row.last_seq), bytes: row.block }));
  }

  /** How far spot_log was archived into spot_processed and deleted (0: never). */
  async archivedThrough(): Promise<number> {
    const [row] = await this.sql<{ seq: bigint }[]>`SELECT archived_through_seq AS seq FROM spot_log_state`;
    return seqOf(row?.seq ?? null);
  }

  /** Stores a whole snapshot in one transaction; the same bytes already there count as stored. */
  async putSnapshot(snapshot: StoredSnapshot): Promise<void> {
    const parts = [snapshot.header, ...snapshot.chunks];
    await this.sql.begin(async (tx) => {
      const there = await tx<{ part: number; bytes: Buffer }[]>`
        SELECT part, bytes FROM spot_snapshots WHERE seq = ${snapshot.seq}::bigint ORDER BY part`;
      if (there.length > 0) {
        const same = there.length === parts.length && there.every((row, i) => row.part === i && row.bytes.equals(parts[i] as Buffer));
        if (!same) throw new SpotLogConflict(`spot log: the snapshot at seq ${snapshot.seq} is stored with other bytes`);
        return;
      }
      for (let part = 0; part < parts.length; part++) {
        await tx`INSERT INTO spot_snapshots (seq, part, bytes) VALUES (${snapshot.seq}::bigint, ${part}, ${parts[part] as Buffer})`;
      }
    });
  }

  /** The seqs of the stored snapshots, newest first. */
  async snapshotSeqs(): Promise<number[]> {
    const rows = await this.sql<{ seq: bigint }[]>`SELECT DISTINCT seq FROM spot_snapshots WHERE part = 0 ORDER BY seq DESC`;
    return rows.map((row) => seqOf(row.seq));
  }

  /** The snapshot at `seq` as stored (verified by whoever decodes it), or null. */
  async snapshot(seq: number): Promise<StoredSnapshot | null> {
    const rows = await this.sql<{ part: number; bytes: Buffer }[]>`
      SELECT part, bytes FROM spot_snapshots WHERE seq = ${seq}::bigint ORDER BY part`;
    const [header, ...chunks] = rows;
    if (header === undefined || header.part !== 0) return null;
    return { seq, header: header.bytes, chunks: chunks.map((row) => row.bytes) };
  }

  /** Deletes the snapshots older than `seq`; resolves how many. */
  async deleteSnapshotsBefore(seq: number): Promise<number> {
    const rows = await this.sql`DELETE FROM spot_snapshots WHERE seq < ${seq}::bigint RETURNING part`;
    return rows.filter((row) => row.part === 0).length;
  }

  /**
   * Archives the log through `seq` in one transaction: the processed-set entries of its blocks
   * (`entries`, which the caller decoded from exactly those blocks) into spot_processed, then
   * the blocks deleted, then the mark moved. `seq` must be a block boundary covered by a stored
   * snapshot; the caller checks both.
   */
  async archiveThrough(seq: number, entries: readonly ArchivedEntry[]): Promise<void> {
    await this.sql.begin(async (tx) => {
      await insertArchived(tx, entries);
      await tx`DELETE FROM spot_log WHERE last_seq <= ${seq}::bigint`;
      await markArchived(tx, seq);
    });
  }

  /**
   * Seeds PostgreSQL's log from a local ledger in ONE transaction (src/ubscore/spot-log/seed.ts), so a
   * crash leaves either all of it or none: `write` stores the snapshot, blocks and archived
   * entries through the writer it is given. Refused unless PostgreSQL holds no SPOT ledger yet.
   */
  async seed(epoch: number, write: (writer: SeedWriter) => Promise<void>): Promise<void> {
    await chainChecked(() => this.seedIn(epoch, write));
  }

  private async seedIn(epoch: number, write: (writer: SeedWriter) => Promise<void>): Promise<void> {
    await this.sql.begin(async (tx) => {
      // The owner's table lock: two seeds of one database never interleave.
      await tx`LOCK TABLE spot_log_state IN EXCLUSIVE MODE`;
      const [row] = await tx<{ held: boolean }[]>`
        SELECT EXISTS (SELECT 1 FROM spot_log) OR EXISTS (SELECT 1 FROM spot_snapshots)
            OR EXISTS (SELECT 1 FROM spot_processed) OR (SELECT archived_through_seq > 0 FROM spot_log_state) AS held`;
      if (row?.held === true) throw new SpotLogConflict('spot log: PostgreSQL already holds a SPOT ledger; refusing to seed it again');
      await write({
        blocks: async (blocks) => {
          for (const block of blocks) await this.insert(tx as unknown as Sql, epoch, block);
        },
        snapshot: async (snapshot) => {
          const parts = [snapshot.header, ...snapshot.chunks];
          for (let part = 0; part < parts.length; part++)
            await tx`INSERT INTO spot_snapshots (seq, part, bytes) VALUES (${snapshot.seq}::bigint, ${part}, ${parts[part] as Buffer})`;
        },
        entries: (entries) => insertArchived(tx, entries),
        archivedThrough: (seq) => markArchived(tx, seq),
      });
    });
  }

  /** Every archived processed-set entry, in pages of `pageRows`, to `visit`. */
  async eachArchived(pageRows: number, visit: (entries: readonly ArchivedEntry[]) => void | Promise<void>): Promise<void> {
    let after: Buffer = Buffer.alloc(0);
    for (;;) {
      const rows = await this.sql<{ key: Buffer; record: Buffer; seq: bigint }[]>`
        SELECT key, record, seq FROM spot_processed WHERE key > ${after} ORDER BY key LIMIT ${pageRows}`;
      if (rows.length === 0) return;
      await visit(rows.map((row) => ({ key: row.key, record: row.record, seq: seqOf(row.seq) })));
      after = (rows[rows.length - 1] as { key: Buffer }).key;
    }
  }
}

/** What a seed writes, all in its one transaction. */
export type SeedWriter = {
  readonly blocks: (blocks: readonly LogBlock[]) => Promise<void>;
  readonly snapshot: (snapshot: StoredSnapshot) => Promise<void>;
  readonly entries: (entries: readonly ArchivedEntry[]) => Promise<void>;
  readonly archivedThrough: (seq: number) => Promise<void>;
};

/** Runs `write`, turning the chain check's refusal (LF002) into SpotLogGap, its message kept. */
async function chainChecked<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isChainBroken(error)) throw new SpotLogGap(`spot log: PostgreSQL refused the block: ${(error as Error).message}`);
    throw error;
  }
}

/** Inserts archived processed-set entries in statements of 1,000; an entry already there is kept (archiving twice is harmless). */
async function insertArchived(tx: Tx, entries: readonly ArchivedEntry[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 1000) {
    const slice = entries.slice(i, i + 1000);
    await tx`
      INSERT INTO spot_processed (key, record, seq)
      SELECT decode(k, 'hex'), decode(r, 'hex'), s
        FROM unnest(${slice.map((e) => e.key.toString('hex'))}::text[], ${slice.map((e) => e.record.toString('hex'))}::text[],
                    ${slice.map((e) => e.seq)}::bigint[]) AS u(k, r, s)
      ON CONFLICT (key) DO NOTHING`;
  }
}

async function markArchived(tx: Tx, seq: number): Promise<void> {
  await tx`UPDATE spot_log_state SET archived_through_seq = GREATEST(archived_through_seq, ${seq}::bigint)`;
}
