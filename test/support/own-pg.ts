// A PostgreSQL server of one harness's own (process.ts, modes `embedded` and `external`), set up
// before its service starts, and removed with the harness.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CLUSTER_LOCATION_FILE,
  DATABASE_NAME,
  ensureDatabase,
  livePostmasterPid,
  startEmbeddedPg,
  type EmbeddedPg,
} from '../../src/db/embedded-pg.js';
import type { TestDatabase } from './database.js';
import { liveDirs, livePgData } from './leftovers.js';
import { sleep } from './polling.js';
import { freePort } from './ports.js';

/** A PostgreSQL server that belongs to one harness (modes `embedded` and `external`). */
export type OwnPg = {
  readonly mode: 'embedded' | 'external';
  readonly port: number;
  /** The cluster's data directory (the one holding postmaster.pid). */
  readonly pgData: string;
  /** The live postmaster's pid, or null when none runs. */
  readonly postmasterPid: () => Promise<number | null>;
  /** `external` only: starts the server again on the same directory and port, retried (bounded) until it runs. */
  readonly start: () => Promise<void>;
};

const OWN_PG_START_ATTEMPTS_MAX = 40;
const OWN_PG_START_RETRY_MS = 250;

/**
 * `embedded`: initialises the cluster the service will start itself, in DATA_DIR/postgres (the
 * directory opened to the `postgres` user, so nothing is relocated), creates its database and
 * stops the server again: the harness then knows the URL before the service starts. `external`:
 * a server in a directory of its own, left running, given to the service as DATABASE_URL.
 */
export async function startOwnPg(
  mode: 'embedded' | 'external',
  dataDir: string,
): Promise<{ pg: OwnPg; db: TestDatabase; env: Record<string, string> }> {
  await fs.chmod(dataDir, 0o755);
  const dir = mode === 'embedded' ? path.join(dataDir, 'postgres') : await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-own-pg-'));
  if (mode === 'external') {
    liveDirs.add(dir);
    await fs.chmod(dir, 0o755);
  }
  const port = await freePort();
  let server: EmbeddedPg = await startEmbeddedPg({ dir, port, sharedBuffersMb: 32, log: () => undefined });
  const location = await fs.readFile(path.join(dir, CLUSTER_LOCATION_FILE), 'utf8').catch(() => null);
  const pgData = path.join(location?.trim() ?? dir, 'pg');
  livePgData.add(pgData);
  await ensureDatabase(server, DATABASE_NAME);
  if (mode === 'embedded') await server.stop();
  const pg: OwnPg = {
    mode,
    port,
    pgData,
    postmasterPid: () => livePostmasterPid(pgData),
    start: async () => {
      if (mode !== 'external') throw new Error('the service starts its embedded server itself');
      // Backends orphaned by a killed postmaster hold its shared memory for a moment: retry.
      for (let attempt = 1; ; attempt++) {
        const error = await startEmbeddedPg({ dir, port, sharedBuffersMb: 32, log: () => undefined }).then(
          (s) => {
            server = s;
            return null;
          },
          (e: unknown) => e,
        );
        if (error === null) return;
        if (attempt >= OWN_PG_START_ATTEMPTS_MAX) throw error;
        await sleep(OWN_PG_START_RETRY_MS);
      }
    },
  };
  const db: TestDatabase = {
    url: server.url(DATABASE_NAME),
    // Whichever server runs in the directory now (the service's, or one started again) is stopped.
    drop: async () => {
      await server.stop();
      livePgData.delete(pgData);
      if (mode === 'external') {
        await fs.rm(dir, { recursive: true, force: true });
        liveDirs.delete(dir);
      }
    },
  };
  const env: Record<string, string> = mode === 'embedded' ? { EMBEDDED_PG_PORT: String(port), EMBEDDED_PG_SHARED_BUFFERS_MB: '32' } : {};
  return { pg, db, env };
}
