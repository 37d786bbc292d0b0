// A copy of UBSCore's whole LMDB environment at one instant, for a backup (src/backup/take.ts):
// the caller pauses UBSCore first, so the copy holds exactly the records through its position.

import { mkdir } from 'node:fs/promises';
import type { WalDatabases } from './databases.js';

/**
 * lmdb-js's root database backup: mdb_env_copy, one read transaction, so one instant. Without
 * compaction: a page-for-page copy is the shortest pause. mdb_env_copy2 writes dir/data.mdb and
 * needs the directory to exist.
 */
export async function copyEnvironment(databases: WalDatabases, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await databases.env.backup(dir, false);
}
