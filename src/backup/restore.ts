// Restores a backup (src/backup/take.ts) into a fresh pair: an empty DATA_DIR, and either a new
// embedded PostgreSQL cluster inside it or an empty database at DATABASE_URL. Nothing is written
// before the backup's every file verifies and both targets are found empty; while it writes, the
// restore owns both the way the service does (DATA_DIR lock, database owner lock), so a service
// cannot start on a half-restored pair. It ends with the service's own ledger identity check.

import fs from 'node:fs/promises';
import path from 'node:path';
import { DATABASE_NAME, ensureDatabase, startEmbeddedPg, type EmbeddedPg } from '../db/embedded-pg.js';
import { migrate, schemaVersion } from '../db/schema.js';
import { openSql, type Sql } from '../db/sql.js';
import { lockDataDir } from '../ownership/data-dir-lock.js';
import { checkLedgerIdentity } from '../ubscore/spot-log/ledger-identity.js';
import { ownDatabase } from '../ownership/pg-owner.js';
import { UBSCORE_FILE, isEmptyDir, readVerifiedManifest, syncDir, type BackupManifest } from './manifest.js';
import { loadTables } from './pg-tables.js';
import { OWNER_LEASE_MS_DEFAULT, RESTORE_RETAKE_BACKOFF_CAP_MS } from '../limits.js';

type RestoreTarget = {
  readonly dataDir: string;
  /** Null: initialise an embedded PostgreSQL cluster in DATA_DIR/postgres. */
  readonly databaseUrl: string | null;
  readonly embeddedPgPort: number;
  readonly log: (line: string) => void;
};

type RestoreOutcome =
  | { readonly kind: 'restored'; readonly ledgerId: string; readonly walSeq: number; readonly rows: number }
  | { readonly kind: 'refused'; readonly reason: string };

export async function restoreBackup(backupDir: string, target: RestoreTarget): Promise<RestoreOutcome> {
  const verified = await readVerifiedManifest(backupDir);
  if (!verified.ok) return { kind: 'refused', reason: verified.reason };
  const manifest = verified.manifest;
  const version = await schemaVersion();
  if (manifest.schemaVersion !== version) {
    return {
      kind: 'refused',
      reason: `the backup is of schema version ${manifest.schemaVersion}, this build's is ${version}: restore it with the build that took it`,
    };
  }
  if (!(await isEmptyDir(target.dataDir)))
    return { kind: 'refused', reason: `DATA_DIR ${target.dataDir} is not empty: restore only into a new one` };
  if (target.databaseUrl !== null) {
    const why = await nonEmptyDatabase(target.databaseUrl);
    if (why !== null) return { kind: 'refused', reason: why };
  }
  const undo: (() => Promise<void>)[] = [];
  try {
    const lock = await lockDataDir(target.dataDir);
    undo.push(() => lock.release());
    const url = target.databaseUrl ?? (await embeddedDatabase(target, undo));
    // A restore is short and holds the lock only to keep a service off the target meanwhile.
    const owner = await ownDatabase(
      url,
      {
        onLost: (reason) => target.log(`restore: ${reason}`),
        onRegained: () => target.log('restore: the owner lock is held again'),
        onTakenByOther: (holder) => target.log(`restore: another process took the target database: ${holder}`),
        log: { info: (message) => target.log(`restore: ${message}`) },
      },
      // The target is empty: no owner of record, no lease to judge; the default lease, for form.
      { retakeBackoffCapMs: RESTORE_RETAKE_BACKOFF_CAP_MS, leaseMs: OWNER_LEASE_MS_DEFAULT },
    );
    undo.push(() => owner.release());
    const sql = openSql(url, { max: 1, application: 'restore' });
    undo.push(() => sql.end({ timeout: 5 }));
    // Checked again under the owner lock: nothing may have arrived since.
    if ((await tablesIn(sql)) > 0) return { kind: 'refused', reason: 'the target database is not empty' };
    await copyLedgerFile(backupDir, target.dataDir);
    await migrate(sql);
    await sql.begin((tx) => loadTables(tx, backupDir, manifest.tables));
    return await verify(sql, target.dataDir, manifest);
  } finally {
    for (const step of undo.reverse()) await step().catch((e: unknown) => target.log(`restore: a cleanup step failed: ${String(e)}`));
  }
}

/** The service's own start-up check, on the restored pair: it must find one ledger, the backup's. */
async function verify(sql: Sql, dataDir: string, manifest: BackupManifest): Promise<RestoreOutcome> {
  // A restore brings both halves: a WAL missing from it is refused, never rebuilt from the log.
  const identity = await checkLedgerIdentity(sql, path.join(dataDir, 'ubscore'), false);
  if (identity.created || identity.id !== manifest.ledgerId)
    throw new Error(`the restored pair names ledger ${identity.id}, the backup ${manifest.ledgerId}`);
  const rows = manifest.tables.reduce((sum, t) => sum + t.rows, 0);
  return { kind: 'restored', ledgerId: identity.id, walSeq: manifest.walSeq, rows };
}

async function copyLedgerFile(backupDir: string, dataDir: string): Promise<void> {
  const target = path.join(dataDir, UBSCORE_FILE);
  await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  await fs.copyFile(path.join(backupDir, UBSCORE_FILE), target, fs.constants.COPYFILE_EXCL);
  const handle = await fs.open(target, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  await syncDir(path.dirname(target));
}

/** A new cluster in DATA_DIR/postgres, started for the restore and stopped after it. */
async function embeddedDatabase(target: RestoreTarget, undo: (() => Promise<void>)[]): Promise<string> {
  const pg: EmbeddedPg = await startEmbeddedPg({
    dir: path.join(target.dataDir, 'postgres'),
    port: target.embeddedPgPort,
    log: target.log,
  });
  undo.push(() => pg.stop());
  // A new cluster (DATA_DIR was empty): the database is new too, and is checked empty below.
  return ensureDatabase(pg, DATABASE_NAME);
}

async function nonEmptyDatabase(url: string): Promise<string | null> {
  const sql = openSql(url, { max: 1, application: 'restore' });
  try {
    const n = await tablesIn(sql);
    return n === 0 ? null : `the target database holds ${n} tables: restore only into an empty database`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Tables, views, sequences of any schema but PostgreSQL's own. */
async function tablesIn(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
      AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')`;
  return row?.n ?? 0;
}
