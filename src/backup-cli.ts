// `make backup` and `make restore`. A backup is taken by the running service itself (POST
// /admin/v1/backup), because only it can pause UBSCore for the cut; this command asks it and
// prints the answer. A restore runs with no service: it refuses unless DATA_DIR and the database
// are empty, and leaves a pair the service starts on.

import http from 'node:http';
import https from 'node:https';
import { restoreBackup } from './backup/restore.js';
import { type BackupConfig, loadBackupConfig } from './config/backup.js';
import { ConfigError, loadConfig, type Config } from './config/config.js';
import { signJwt } from './http/auth/jwt.js';
import { errorDetail } from './error-text.js';

const ADMIN_TOKEN_LIFETIME_S = 600;

async function main(): Promise<number> {
  const command = process.argv[2];
  let config: Config;
  let backup: BackupConfig;
  try {
    config = loadConfig();
    backup = loadBackupConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    return 2;
  }
  switch (command) {
    case 'backup':
      return takeThroughService(config, backup);
    case 'restore':
      return restore(config, backup);
    default:
      process.stderr.write('usage: node dist/src/backup-cli.js backup|restore (see docs/operations.md: How to back up and restore)\n');
      return 2;
  }
}

async function takeThroughService(config: Config, backup: BackupConfig): Promise<number> {
  const secret = config.jwt.hs256Secret;
  if (backup.adminToken === null && secret === null) {
    process.stderr.write(
      'backup: set ADMIN_TOKEN to an admin token of your issuer (this service verifies no HS256 secret to sign one with)\n',
    );
    return 2;
  }
  const token =
    backup.adminToken ??
    signJwt({ sub: 'backup-cli', role: 'admin', exp: Math.floor(Date.now() / 1000) + ADMIN_TOKEN_LIFETIME_S }, secret as string);
  const answer = await post(`${backup.serviceUrl}/admin/v1/backup`, token, { dir: backup.backupDir });
  process.stdout.write(`${answer.body}\n`);
  return answer.status === 200 ? 0 : 1;
}

async function restore(config: Config, backup: BackupConfig): Promise<number> {
  if (!backup.dataDirGiven) {
    process.stderr.write('configuration error: DATA_DIR is required for a restore (a new, empty directory)\n');
    return 2;
  }
  const outcome = await restoreBackup(backup.backupDir, {
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    embeddedPgPort: config.embeddedPgPort,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  if (outcome.kind === 'refused') {
    process.stderr.write(`refused to restore: ${outcome.reason}\n`);
    return 3;
  }
  process.stdout.write(
    `${JSON.stringify({ restored: true, data_dir: config.dataDir, ledger_id: outcome.ledgerId, wal_seq: outcome.walSeq, rows: outcome.rows })}\n`,
  );
  return 0;
}

/** One POST without a client-side time limit: a large backup may take minutes. */
function post(url: string, token: string, body: unknown): Promise<{ status: number; body: string }> {
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`failed: ${errorDetail(error)}\n`);
    process.exit(1);
  },
);
