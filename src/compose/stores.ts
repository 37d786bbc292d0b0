// The stores this process owns (rule 7, exactly one owner): DATA_DIR, the database (embedded
// unless DATABASE_URL) and its owner lock, the schema and the ledger pairing, then the halt.

import path from 'node:path';
import type { Config } from '../config/config.js';
import { DATABASE_NAME, ensureDatabase, startEmbeddedPg, type EmbeddedPg } from '../db/embedded-pg.js';
import { watchEmbeddedPg, type PgWatch } from '../db/embedded-pg-watch.js';
import { checkMigrated, migrate, seedDemoAssets } from '../db/schema.js';
import { openSql, type Sql } from '../db/sql.js';
import { SPOT_LOG_ARCHIVE_INTERVAL_MS } from '../limits.js';
import { SpotLogArchive } from '../ubscore/spot-log/archive.js';
import { planRetention } from '../ubscore/processed/retention-plan.js';
import { reconcileSpotLog } from '../ubscore/spot-log/reconcile.js';
import { SpotLogStore } from '../ubscore/spot-log/store.js';
import type { Logger } from '../log.js';
import { HaltSwitch } from '../services/halt.js';
import { lockDataDir } from '../ownership/data-dir-lock.js';
import { checkLedgerIdentity, holdsFunds } from '../ubscore/spot-log/ledger-identity.js';
import { ownDatabase, waitForOwnership } from '../ownership/pg-owner.js';
import { OwnershipError } from '../ownership/errors.js';
import { fatal, type Start, type Stores } from './parts.js';

/**
 * Rule 7, exactly one owner: DATA_DIR first (before its embedded PostgreSQL is touched), then the
 * database, then the check that both hold the same ledger; only then anything is written.
 */
export async function openStores(start: Start): Promise<Stores> {
  return ownStores(start, await locateStores(start));
}

/** Where the stores are: DATA_DIR, locked, and the database's URL. A standby holds only these. */
export type Located = { readonly databaseUrl: string; readonly watch: PgWatch | null };

export async function locateStores(start: Start): Promise<Located> {
  const { config, log, stack } = start;
  const dirLock = await lockDataDir(config.dataDir);
  stack.push(() => dirLock.release());
  const { url: databaseUrl, watch } = await database(config, log, stack, start.nowStack);
  return { databaseUrl, watch };
}

/** The owner lock, the schema, the owner epoch, the main pool and the halt: what only the owner holds. */
export async function ownStores(start: Start, located: Located): Promise<Stores> {
  const { config, log, stack } = start;
  const { databaseUrl, watch } = located;
  const owner = await ownDatabase(databaseUrl, ownerEvents(start, watch), {
    retakeBackoffCapMs: config.pgRecoveryBackoffCapMs,
    leaseMs: config.lease.ms,
  });
  stack.push(() => owner.release());
  // The schema and the ledger pairing are checked on a connection of their own, not fenced:
  // the owner epoch is claimed only once the schema that holds it is there.
  const setup = openSql(databaseUrl, { max: 1, application: 'setup', timeouts: config.pgTimeouts });
  try {
    await prepareSchema(config, setup, log);
  } finally {
    await setup.end({ timeout: 5 });
  }
  const identity = await owner.claim(config.lease, (reason) => fatal(start, reason));
  log.info('owner epoch claimed', { epoch: identity.epoch, owner: identity.tag });
  const sql = openSql(databaseUrl, { max: config.mainPgPoolMax, application: 'main', timeouts: config.pgTimeouts, owner: identity });
  stack.push(() => sql.end({ timeout: 5 }));
  if (config.spotLog === 'off' && (await new SpotLogStore(sql).holdsLedger()))
    throw new OwnershipError(
      'SPOT_LOG=off against a database that keeps the SPOT log in PostgreSQL: its log would go stale, and a standby or a rebuild from it would lose SPOT records; start with SPOT_LOG=postgres',
    );
  if (config.spotLog === 'postgres') {
    await reconcileSpotLog({
      sql,
      store: new SpotLogStore(sql),
      walDir: path.join(config.dataDir, 'ubscore'),
      role: 'primary',
      epoch: identity.epoch,
      log,
    });
    startArchive(start, sql);
  }
  return { databaseUrl, sql, owner, halt: await loadHalt(sql, log) };
}

async function loadHalt(sql: Sql, log: Logger): Promise<HaltSwitch> {
  const halt = await HaltSwitch.load(sql, log);
  if (halt.current !== null)
    log.critical('starting HALTED: new transfers and external movements are refused until an operator resumes', {
      reason: halt.current.reason,
    });
  return halt;
}

/**
 * A standby's checks before its UBSCore opens (ROLE=standby writes nothing to PostgreSQL): the
 * schema is migrated, the database holds a ledger (the primary's first start wrote its id),
 * the local WAL is made a prefix of PostgreSQL's log (caught up, or rebuilt from PostgreSQL when
 * it is empty, ahead or diverged), and both name the same ledger.
 */
export async function prepareStandby(start: Start, located: Located): Promise<void> {
  const { config, log } = start;
  const walDir = path.join(config.dataDir, 'ubscore');
  const sql = openSql(located.databaseUrl, {
    max: 1,
    application: 'standby setup',
    timeouts: config.pgTimeouts,
    owner: { tag: `standby-${process.pid}`, epoch: 'standby' },
  });
  try {
    await checkMigrated(sql);
    const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ledger_identity`;
    if (row?.n !== 1) throw new OwnershipError('ROLE=standby found no ledger in the database: start the primary first, then its standby');
    const store = new SpotLogStore(sql);
    // An owner that keeps no SPOT log in PostgreSQL (SPOT_LOG=off) leaves a standby nothing to
    // follow: taking over, it would serve SPOT balances of nothing.
    if (!(await store.holdsLedger()) && (await holdsFunds(sql)))
      throw new OwnershipError(
        'ROLE=standby: the database holds transfers and balances but no SPOT log (its owner runs with SPOT_LOG=off): nothing to follow',
      );
    await reconcileSpotLog({ sql, store, walDir, role: 'standby', epoch: 'standby', log });
    const ledger = await checkLedgerIdentity(sql, walDir, true);
    log.info('standby: local SPOT WAL ready to follow', { ledger_id: ledger.id });
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * A standby takes over (ROLE=standby): waits for the ownership (the owner lock free, or its
 * holder's lease lapsed: src/ownership/pg-owner.ts ends that holder's sessions; through
 * PostgreSQL's restarts and failovers, each told to `trouble`), claims the
 * epoch, then opens the fenced pool and reads the halt; its UBSCore already holds the ledger.
 */
export async function promoteStores(start: Start, located: Located, trouble: (reason: string | null) => void): Promise<Stores> {
  const { config, log, stack } = start;
  const { databaseUrl, watch } = located;
  const owner = await waitForOwnership(databaseUrl, ownerEvents(start, watch), {
    retakeBackoffCapMs: config.pgRecoveryBackoffCapMs,
    leaseMs: config.lease.ms,
    onWaitTrouble: trouble,
  });
  stack.push(() => owner.release());
  const identity = await owner.claim(config.lease, (reason) => fatal(start, reason));
  log.critical('standby promoted: this process owns the SPOT ledger now', { epoch: identity.epoch, owner: identity.tag });
  const sql = openSql(databaseUrl, { max: config.mainPgPoolMax, application: 'main', timeouts: config.pgTimeouts, owner: identity });
  stack.push(() => sql.end({ timeout: 5 }));
  if (config.spotLog === 'postgres') startArchive(start, sql);
  return { databaseUrl, sql, owner, halt: await loadHalt(sql, log) };
}

/**
 * The archive of PostgreSQL's SPOT log (src/ubscore/spot-log/archive.ts): the blocks a snapshot kept there
 * covers, moved into spot_processed (less what the processed set's retention may already forget),
 * at start and then every SPOT_LOG_ARCHIVE_INTERVAL_MS.
 */
function startArchive(start: Start, sql: Sql): void {
  const retentionS = start.config.retention.retentionS;
  const archive = new SpotLogArchive(new SpotLogStore(sql), start.log, () => planRetention(sql, retentionS));
  archive.start(SPOT_LOG_ARCHIVE_INTERVAL_MS);
  start.stack.push(() => archive.stop());
}

/**
 * Production migrates as its own step (`make migrate`), so a start never changes the schema
 * under a running fleet by surprise: it only checks that none is pending and none was edited.
 */
async function prepareSchema(config: Config, sql: Sql, log: Logger): Promise<void> {
  let applied = 0;
  if (config.migrateOnStart) applied = (await migrate(sql)).applied;
  else await checkMigrated(sql);
  const ledger = await checkLedgerIdentity(sql, path.join(config.dataDir, 'ubscore'), config.spotLog === 'postgres');
  // The demo assets are a development convenience; in production an operator creates assets.
  if (config.nodeEnv === 'development') await seedDemoAssets(sql);
  log.info('schema ready', { migrations_applied: applied, ledger_id: ledger.id, ledger_created: ledger.created });
}

/**
 * The database's URL: DATABASE_URL's server, or the embedded one, started here and watched (a
 * postmaster that dies is started again; `watch` is null with DATABASE_URL, whose server is
 * someone else's to restart: the pools and the owner lock reconnect once it answers).
 */
async function database(
  config: Config,
  log: Logger,
  stack: (() => Promise<void>)[],
  nowStack: (() => void)[],
): Promise<{ readonly url: string; readonly watch: PgWatch | null }> {
  if (config.databaseUrl !== null) return { url: config.databaseUrl, watch: null };
  const pg: EmbeddedPg = await startEmbeddedPg({
    dir: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPgPort,
    sharedBuffersMb: config.embeddedPgSharedBuffersMb,
    log: (line) => log.info(line),
  });
  stack.push(() => pg.stop());
  nowStack.push(() => pg.stopNow());
  const url = await ensureDatabase(pg, DATABASE_NAME);
  // Undone before pg.stop(): a stop on purpose never looks like a crash to restart from.
  const watch = watchEmbeddedPg(pg, {
    backoffCapMs: config.pgRecoveryBackoffCapMs,
    onDown: () => log.critical('the embedded PostgreSQL died: restarting it; transfers wait and are retried'),
    onUp: (attempts) => log.info('the embedded PostgreSQL was restarted', { attempts }),
    log,
  });
  stack.push(() => watch.stop());
  return { url, watch };
}

/**
 * Rule 7 while the database comes and goes: a closed owner connection stops new work (the HTTP
 * owner gate, /readyz) until the lock is taken again; a lock another process took meanwhile
 * stops this one. A closed connection is also the event that tells the watcher to look now.
 */
function ownerEvents(start: Start, watch: PgWatch | null) {
  const { log, stopping } = start;
  return {
    onLost: (reason: string) => {
      if (stopping()) return;
      log.critical('owner lock lost: not taking new work until it is taken again', { reason });
      watch?.check();
    },
    onRegained: (attempts: number) => log.info('owner lock taken again: taking new work', { attempts }),
    onTakenByOther: (holder: string) => {
      if (!stopping())
        fatal(
          start,
          `another process took the owner lock while this one had lost it: ${holder}. Two processes on one database would split the SPOT ledger`,
        );
    },
    log,
  };
}
