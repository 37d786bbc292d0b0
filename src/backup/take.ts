// Takes a backup of the RUNNING service: both halves of the ledger at one cut.
//
// The cut. UBSCore is paused (it decides nothing; commands wait), and once every command it
// decided is durable at WAL position W, PostgreSQL's snapshot is taken (the first statement of a
// REPEATABLE READ transaction), the LMDB environment is copied (mdb_env_copy), and UBSCore
// resumes. Nothing SPOT happens during the pause, so:
// - every SPOT effect PostgreSQL's snapshot records (a COMMITTED transfer, a DONE movement) was
//   answered before the snapshot, hence decided and durable by W: it is in the copy;
// - every SPOT effect in the copy (decided by W) was sent after the PostgreSQL commit that
//   announced it (rule 1, persist then call), which precedes the pause, hence the snapshot: its
//   transfer or movement is in the dump, in the state that announced the call or a later one.
// A restore's start-up recovery then re-drives the announced-but-unanswered ones, and UBSCore
// answers a repeat from its processed set. The tables are read afterwards, from that snapshot,
// while the service runs on.

import fs from 'node:fs/promises';
import path from 'node:path';
import type { UbsControlApi, UbsCopyOutcome } from '../ubscore/control.js';
import { schemaVersion } from '../db/schema.js';
import { openSql, type Tx } from '../db/sql.js';
import type { Logger } from '../log.js';
import {
  MANIFEST_FILE,
  MANIFEST_FORMAT,
  POSTGRES_DIR,
  UBSCORE_FILE,
  describeFile,
  isEmptyDir,
  writeManifest,
  type BackupManifest,
} from './manifest.js';
import { dumpTables } from './pg-tables.js';
import { BACKUP_PAUSE_MS_MAX } from '../limits.js';
import { errorText } from '../error-text.js';

type BackupControl = Pick<UbsControlApi, 'pause' | 'copyTo' | 'resume'>;

export type BackupOutcome =
  | { readonly kind: 'done'; readonly dir: string; readonly manifest: BackupManifest }
  | {
      readonly kind: 'refused';
      readonly code: 'INVALID_REQUEST' | 'BACKUP_TARGET_NOT_EMPTY' | 'BACKUP_IN_PROGRESS';
      readonly message: string;
    }
  | { readonly kind: 'failed'; readonly message: string };

type Cut = Omit<BackupManifest, 'format' | 'createdAt' | 'ubscore'>;

async function removeParts(dir: string): Promise<void> {
  for (const part of [path.dirname(UBSCORE_FILE), POSTGRES_DIR])
    await fs.rm(path.join(dir, part), { recursive: true, force: true }).catch(() => undefined);
}

export class BackupTaker {
  private running = false;

  constructor(private readonly deps: { readonly databaseUrl: string; readonly control: BackupControl; readonly log: Logger }) {}

  async take(dir: string): Promise<BackupOutcome> {
    if (!path.isAbsolute(dir)) return { kind: 'refused', code: 'INVALID_REQUEST', message: 'dir must be an absolute path' };
    if (this.running) return { kind: 'refused', code: 'BACKUP_IN_PROGRESS', message: 'another backup is running' };
    // The slot is claimed before the first wait: a second request arriving meanwhile is refused.
    this.running = true;
    if (!(await isEmptyDir(dir))) {
      this.running = false;
      return { kind: 'refused', code: 'BACKUP_TARGET_NOT_EMPTY', message: `${dir} exists and is not empty` };
    }
    const sql = openSql(this.deps.databaseUrl, { max: 1, application: 'backup' });
    try {
      await fs.mkdir(path.join(dir, path.dirname(UBSCORE_FILE)), { recursive: true, mode: 0o700 });
      const cut = await sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', (tx) => this.cut(tx, dir));
      if (typeof cut === 'string') return { kind: 'failed', message: cut };
      const manifest: BackupManifest = {
        format: MANIFEST_FORMAT,
        createdAt: new Date().toISOString(),
        ...cut,
        ubscore: await describeFile(dir, UBSCORE_FILE),
      };
      await writeManifest(dir, manifest);
      this.deps.log.info('backup taken', { dir, ledger_id: manifest.ledgerId, wal_seq: manifest.walSeq, pause_ms: manifest.pauseMs });
      return { kind: 'done', dir, manifest };
    } catch (error) {
      return { kind: 'failed', message: errorText(error) };
    } finally {
      // A backup that did not finish has no manifest; what it wrote goes, so the directory is empty again.
      if (
        !(await fs.access(path.join(dir, MANIFEST_FILE)).then(
          () => true,
          () => false,
        ))
      )
        await removeParts(dir);
      this.running = false;
      await sql.end({ timeout: 5 });
    }
  }

  /** The pause, the snapshot and the copy; then the tables from the snapshot. A string says why it failed. */
  private async cut(tx: Tx, dir: string): Promise<Cut | string> {
    const { control } = this.deps;
    const started = Date.now();
    const paused = await control.pause(BACKUP_PAUSE_MS_MAX);
    if (paused.kind !== 'paused') return `UBSCore could not pause: ${paused.reason}`;
    let pg: { snapshot: string; ledger_id: string | null; version: number } | undefined;
    let copied: UbsCopyOutcome | undefined;
    try {
      // The transaction's first statement takes its snapshot: inside the pause, after W is durable.
      [pg] = await tx<{ snapshot: string; ledger_id: string | null; version: number }[]>`
        SELECT pg_current_snapshot()::text AS snapshot,
               (SELECT ledger_id::text FROM ledger_identity) AS ledger_id,
               (SELECT max(version) FROM schema_migrations)::int AS version`;
      copied = await control.copyTo(path.join(dir, path.dirname(UBSCORE_FILE)));
    } finally {
      const resumed = await control.resume();
      if (resumed.expired) copied = { kind: 'refused' as const, reason: `the pause outlived ${BACKUP_PAUSE_MS_MAX} ms` };
    }
    const pauseMs = Date.now() - started;
    if (pg === undefined) return 'PostgreSQL answered no snapshot';
    if (copied.kind !== 'copied') return `the UBSCore copy failed: ${copied.reason}`;
    if (copied.walSeq !== paused.walSeq) return `UBSCore moved from ${paused.walSeq} to ${copied.walSeq} while paused`;
    if (pg.ledger_id === null || pg.ledger_id !== copied.ledgerId)
      return `the two halves name different ledgers: ${String(pg.ledger_id)} and ${String(copied.ledgerId)}`;
    const version = await schemaVersion();
    if (pg.version !== version) return `the database is at schema version ${pg.version}, this build's is ${version}`;
    const tables = await dumpTables(tx, dir);
    return { ledgerId: pg.ledger_id, walSeq: paused.walSeq, pgSnapshot: pg.snapshot, schemaVersion: pg.version, pauseMs, tables };
  }
}
