// The two stores of one ledger name the same ledger. At the first start of a fresh database and
// a fresh WAL, one id is written to both (PostgreSQL first). Every later start compares them and
// refuses a pair that is not one ledger: a WAL from another database, a fresh WAL against a used
// database (its SPOT balances would be lost), or a used WAL against a fresh database (SPOT funds
// with no ledger behind them). Runs while this process owns both (DATA_DIR lock, owner lock),
// before UBSCore opens the WAL. With the SPOT log kept in PostgreSQL, a fresh WAL
// against a used database is no loss: the start rebuilds the SPOT ledger from PostgreSQL
// (src/ubscore/spot-log/reconcile.ts) once the owner epoch is claimed.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Sql } from '../../db/sql.js';
import type { WalDatabases } from '../../../wal/databases.js';
import { openWalDatabases } from '../../../wal/log.js';
import { checkFormatVersion, holdsLedgerState, readLedgerId, writeLedgerId } from '../../../wal/meta.js';
import { OwnershipError } from '../../ownership/errors.js';
import { SpotLogStore } from './store.js';

type LedgerIdentity = { readonly id: string; readonly created: boolean };

/** The file of an LMDB environment opened on a directory (lmdb-js, without noSubdir). */
const LMDB_DATA_FILE = 'data.mdb';

type Side = {
  readonly id: string | null;
  readonly used: boolean;
  /** PostgreSQL's side only: it holds the SPOT log (spot_log and its snapshots) and SPOT_LOG is on, so the SPOT ledger can be rebuilt from it. */
  readonly spotLog?: boolean;
};

/**
 * Checks (or, on a first start, writes) the ledger id of the database and of the WAL in `walDir`;
 * `spotLog`: SPOT_LOG is on, so a SPOT ledger PostgreSQL holds may be rebuilt from it.
 */
export async function checkLedgerIdentity(sql: Sql, walDir: string, spotLog: boolean): Promise<LedgerIdentity> {
  const pg = { ...(await postgresSide(sql)), spotLog: spotLog && (await new SpotLogStore(sql).holdsLedger()) };
  // A WAL directory that holds no environment is not created by a start that is then refused.
  const databases = (await hasEnvironment(walDir)) ? openWalDatabases(walDir) : null;
  try {
    if (databases !== null) checkFormatVersion(databases, walDir);
    const wal: Side = databases === null ? { id: null, used: false } : { id: readLedgerId(databases), used: holdsLedgerState(databases) };
    const decided = decide(pg, wal, walDir);
    if (decided.writePostgres) await sql`INSERT INTO ledger_identity (ledger_id) VALUES (${decided.id}::uuid)`;
    if (decided.writeWal) await stampWal(databases, walDir, decided.id);
    return { id: decided.id, created: decided.writePostgres && decided.writeWal };
  } finally {
    await databases?.env.close();
  }
}

async function hasEnvironment(walDir: string): Promise<boolean> {
  return fs.access(path.join(walDir, LMDB_DATA_FILE)).then(
    () => true,
    () => false,
  );
}

/** Stamps the WAL with the ledger id, creating its environment if this is its first start. */
async function stampWal(open: WalDatabases | null, walDir: string, id: string): Promise<void> {
  const databases = open ?? openWalDatabases(walDir);
  try {
    if (open === null) checkFormatVersion(databases, walDir);
    writeLedgerId(databases, id);
  } finally {
    if (open === null) await databases.env.close();
  }
}

type Decision = {
  readonly id: string;
  readonly writePostgres: boolean;
  readonly writeWal: boolean;
  /** The WAL is to be rebuilt from PostgreSQL's SPOT log (src/ubscore/spot-log/rebuild.ts stamps it). */
  readonly rebuild?: boolean;
};

/** What a start may do with the two ids it found; throws OwnershipError for a pair that is not one ledger. */
export function decide(pg: Side, wal: Side, walDir: string): Decision {
  const refuse = (why: string): never => {
    throw new OwnershipError(
      `${why}; refusing to start. The database and DATA_DIR (${walDir}) must be the two halves of one ledger: restore both from one backup, or start both empty.`,
    );
  };
  if (pg.id !== null && wal.id !== null) {
    if (pg.id !== wal.id) refuse(`the WAL belongs to ledger ${wal.id} and the database to ledger ${pg.id}`);
    return { id: pg.id, writePostgres: false, writeWal: false };
  }
  if (pg.id !== null) {
    if (wal.used) refuse(`the WAL holds SPOT state but no ledger id, and the database belongs to ledger ${pg.id}`);
    // An empty DATA_DIR against a database holding the SPOT log: the ledger is rebuilt from it.
    if (pg.spotLog === true) return { id: pg.id, writePostgres: false, writeWal: false, rebuild: true };
    if (pg.used)
      refuse(`the WAL is empty but the database of ledger ${pg.id} holds transfers and balances: its SPOT balances would be lost`);
    return { id: pg.id, writePostgres: false, writeWal: true }; // a first start cut short between the two writes
  }
  if (wal.id !== null) {
    if (wal.used) refuse(`the database is ${pg.used ? 'unstamped' : 'empty'} but the WAL of ledger ${wal.id} holds SPOT state`);
    if (pg.used) refuse(`the database holds transfers and balances but no ledger id, and the (empty) WAL belongs to ledger ${wal.id}`);
    return { id: wal.id, writePostgres: true, writeWal: false };
  }
  if (pg.used !== wal.used) {
    refuse(
      pg.used
        ? 'the WAL is empty but the database holds transfers and balances: its SPOT balances would be lost'
        : 'the database is empty but the WAL holds SPOT state',
    );
  }
  // Both empty (a first start), or both used by a build that wrote no id: one new id for both.
  return { id: randomUUID(), writePostgres: true, writeWal: true };
}

async function postgresSide(sql: Sql): Promise<Side> {
  const [row] = await sql<{ id: string | null }[]>`SELECT (SELECT ledger_id::text FROM ledger_identity) AS id`;
  if (row === undefined) throw new Error('PostgreSQL answered no row for the ledger identity');
  return { id: row.id, used: await holdsFunds(sql) };
}

/** Whether the database holds any FUNDING-side money: a transfer, a balance or an external movement. */
export async function holdsFunds(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ used: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM transfers_tb) OR EXISTS (SELECT 1 FROM funding_balances) OR EXISTS (SELECT 1 FROM external_movements) AS used`;
  return row?.used === true;
}
