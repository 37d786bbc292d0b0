// What `make backup` and `make restore` read on top of the service's variables (src/config/config.ts).

import path from 'node:path';
import { CONNECT_PORT_MIN, PORT_MAX } from '../limits.js';
import { ConfigError, type Env, intVar, nonEmpty, urlVar } from './vars.js';

/** What `make backup` and `make restore` read on top of the service's own variables. */
export type BackupConfig = {
  /** Absolute: the service writes it on its own host, maybe from another working directory. */
  readonly backupDir: string;
  /** The running service `make backup` asks; by default the one HOST and PORT name. */
  readonly serviceUrl: string;
  /** A token with the admin role; null: one is signed with JWT_SECRET. */
  readonly adminToken: string | null;
  /** Whether DATA_DIR was given: a restore never falls back to the default ./data. */
  readonly dataDirGiven: boolean;
};

export function loadBackupConfig(env: Env = process.env): BackupConfig {
  const dir = nonEmpty(env.BACKUP_DIR);
  if (dir === null) throw new ConfigError('BACKUP_DIR is required: the directory to write the backup to, or to restore it from');
  const port = intVar(env, 'PORT', 8080, CONNECT_PORT_MIN, PORT_MAX);
  return {
    backupDir: path.resolve(dir),
    serviceUrl: urlVar(env, 'SERVICE_URL') ?? `http://${env.HOST ?? '127.0.0.1'}:${port}`,
    adminToken: nonEmpty(env.ADMIN_TOKEN),
    dataDirGiven: nonEmpty(env.DATA_DIR) !== null,
  };
}
