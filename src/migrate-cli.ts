// `make migrate`: applies the pending schema migrations (src/db/migrations/*.sql), then the SQL
// functions whose files are new or changed (src/db/migrations/repeatable/*.sql), and exits, the
// step a production deployment runs before it starts the new build (MIGRATE_ON_START is off
// there). With DATABASE_URL it migrates that database. Without it, the embedded PostgreSQL of
// DATA_DIR: started for the purpose under the DATA_DIR lock, so never beside a running service
// (which holds it), and stopped again. An applied migration whose file changed is refused.

import path from 'node:path';
import { ConfigError, loadConfig } from './config/config.js';
import { DATABASE_NAME, ensureDatabase, startEmbeddedPg, type EmbeddedPg } from './db/embedded-pg.js';
import { MigrationError, migrate } from './db/migrations.js';
import { openSql } from './db/sql.js';
import { OwnershipError } from './ownership/errors.js';
import { lockDataDir } from './ownership/data-dir-lock.js';
import { errorDetail } from './error-text.js';

async function main(): Promise<number> {
  const config = loadConfig();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const lock = config.databaseUrl === null ? await lockDataDir(config.dataDir) : null;
  let pg: EmbeddedPg | null = null;
  try {
    let url = config.databaseUrl;
    if (url === null) {
      pg = await startEmbeddedPg({ dir: path.join(config.dataDir, 'postgres'), port: config.embeddedPgPort, log });
      url = await ensureDatabase(pg, DATABASE_NAME);
    }
    const sql = openSql(url, { max: 1, application: 'migrate', timeouts: config.pgTimeouts });
    try {
      const { applied, total, repeatablesApplied } = await migrate(sql);
      process.stdout.write(
        `migrate: ${applied} applied, the database is at version ${total}; ${repeatablesApplied} function file(s) re-applied\n`,
      );
    } finally {
      await sql.end({ timeout: 5 });
    }
    return 0;
  } finally {
    await pg?.stop();
    await lock?.release();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const known = error instanceof ConfigError || error instanceof MigrationError || error instanceof OwnershipError;
    process.stderr.write(`migrate: ${known ? (error as Error).message : errorDetail(error)}\n`);
    process.exit(known ? 3 : 1);
  },
);
