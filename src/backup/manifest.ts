// A backup directory: `manifest.json` (written last, so a directory without it is an unfinished
// backup), UBSCore's LMDB environment copied at the cut (`ubscore/data.mdb`), and one file per
// PostgreSQL table as JSON lines (`postgres/<table>.jsonl`), read in ONE snapshot taken at
// the same cut. Every file carries its size and SHA-256, checked before a restore writes anything.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export const MANIFEST_FILE = 'manifest.json';
export const MANIFEST_FORMAT = 1;
export const UBSCORE_FILE = path.join('ubscore', 'data.mdb');
export const POSTGRES_DIR = 'postgres';

type FileEntry = { readonly file: string; readonly bytes: number; readonly sha256: string };
export type TableEntry = FileEntry & { readonly name: string; readonly columns: readonly string[]; readonly rows: number };

export type BackupManifest = {
  readonly format: typeof MANIFEST_FORMAT;
  readonly createdAt: string;
  /** The ledger id both halves carry (PostgreSQL's ledger_identity and the WAL's meta). */
  readonly ledgerId: string;
  /** UBSCore's WAL position at the cut: the copy holds exactly the records up to it. */
  readonly walSeq: number;
  /** pg_current_snapshot() of the transaction every table was read in, taken inside the pause. */
  readonly pgSnapshot: string;
  /** The schema's migration count; a restore needs a build with the same. */
  readonly schemaVersion: number;
  /** How long UBSCore decided nothing, in ms. */
  readonly pauseMs: number;
  readonly ubscore: FileEntry;
  readonly tables: readonly TableEntry[];
};

/** Size and SHA-256 of a file under `dir`. */
export async function describeFile(dir: string, file: string): Promise<FileEntry> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path.join(dir, file)) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { file, bytes, sha256: hash.digest('hex') };
}

/** Writes the manifest whole or not at all, and syncs it: its presence says the backup is complete. */
export async function writeManifest(dir: string, manifest: BackupManifest): Promise<void> {
  const temp = path.join(dir, `${MANIFEST_FILE}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await fs.open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(manifest, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, path.join(dir, MANIFEST_FILE));
  await syncDir(dir);
}

/** The manifest of a complete backup whose files all verify, or why not. */
export async function readVerifiedManifest(dir: string): Promise<{ ok: true; manifest: BackupManifest } | { ok: false; reason: string }> {
  const text = await fs.readFile(path.join(dir, MANIFEST_FILE), 'utf8').catch(() => null);
  if (text === null) return { ok: false, reason: `${dir} holds no ${MANIFEST_FILE}: not a backup, or one that did not finish` };
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(text) as BackupManifest;
  } catch {
    return { ok: false, reason: `${MANIFEST_FILE} is not JSON` };
  }
  if (manifest.format !== MANIFEST_FORMAT)
    return { ok: false, reason: `backup format ${String(manifest.format)}; this build reads format ${MANIFEST_FORMAT}` };
  for (const entry of [manifest.ubscore, ...manifest.tables]) {
    if (path.isAbsolute(entry.file) || entry.file.split(path.sep).includes('..'))
      return { ok: false, reason: `${entry.file} is outside the backup` };
    const found = await describeFile(dir, entry.file).catch(() => null);
    if (found === null) return { ok: false, reason: `${entry.file} is missing` };
    if (found.bytes !== entry.bytes || found.sha256 !== entry.sha256)
      return { ok: false, reason: `${entry.file} does not match its checksum: the backup is damaged` };
  }
  return { ok: true, manifest };
}

/** Makes a rename or a new file in `dir` durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Whether `dir` is missing or holds nothing; a file where a directory should be is not empty. */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await fs.readdir(dir)).length === 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}
