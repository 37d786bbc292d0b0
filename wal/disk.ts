// What UBSCore's writer needs about the disk under its LMDB environment: the free space it
// keeps in reserve, a probe that says when the directory takes writes again, and the real
// cause of a failed commit.
//
// Measured with lmdb 3.5.6 on a full tmpfs (useWritemap false, so pages go out by pwrite, and a
// full disk is an error, not a SIGBUS): a commit that cannot extend the file fails with ENOSPC
// (or EIO for a short write), LMDB aborts the transaction, and lmdb-js rejects the write with a
// generic Error whose `commitError` promise holds LMDB's error. But its failed-page-write path
// (mdb_page_flush in its mdb.c) formats "Attempting to write page at position ..." into a
// malloc(100) buffer with sprintf, and the message is often longer: a heap overflow. Most runs of
// a single failed commit then died in glibc's malloc checks ("corrupted size vs. prev_size"),
// whether the environment was kept or closed and reopened. So UBSCore never lets LMDB meet a full
// disk: it checks the free space against a reserve before every write, and probes with a plain
// file; a failed page write that happens anyway (a race with another writer) is fatal, since the
// process's memory can no longer be trusted, and the restart replays the durable WAL.

import { statfsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorText } from '../src/error-text.js';
/** LMDB's "environment had a fatal error" code: nothing more can be written until it is reopened. */
export const MDB_PANIC = -30795;
/** The file a probe writes and removes again, beside LMDB's data.mdb and lock.mdb. */
const DISK_PROBE_FILE = 'disk-probe';

/** Why a write failed: LMDB's message and code (an errno, or an MDB_ code), when lmdb-js gave them. */
type CommitFailure = { readonly message: string; readonly code: number | string | null };

function codeOf(error: unknown): number | string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' || typeof code === 'string' ? code : null;
}

/** Whether `error` is lmdb-js's report of a failed commit (the one that carries `commitError`). */
export function isCommitFailure(error: unknown): error is Error & { readonly commitError: Promise<never> } {
  return error instanceof Error && (error as { commitError?: unknown }).commitError instanceof Promise;
}

/** The cause of a failed write, with LMDB's own error when lmdb-js carried it. Never rejects. */
export async function commitFailure(error: unknown): Promise<CommitFailure> {
  if (!isCommitFailure(error)) return { message: errorText(error), code: codeOf(error) };
  try {
    await error.commitError;
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return { message: `${error.message}: ${message}`, code: codeOf(cause) };
  }
  return { message: error.message, code: null };
}

/** Bytes free for an unprivileged writer on the filesystem holding `dir`. Throws if it cannot be read. */
export function freeBytes(dir: string): number {
  const stats = statfsSync(dir);
  return Number(stats.bavail) * Number(stats.bsize);
}

/** A reason to refuse the next write, or null when at least `reserveBytes` are free (0 disables the check). */
export function diskShortfall(dir: string, reserveBytes: number): string | null {
  if (reserveBytes === 0) return null;
  let free: number;
  try {
    free = freeBytes(dir);
  } catch (error) {
    return `cannot read the free space of ${dir}: ${errorText(error)}`;
  }
  return free >= reserveBytes ? null : `${free} bytes free under ${dir}, below the reserve of ${reserveBytes}`;
}

/** Whether a failed commit went through lmdb-js's overflowing failed-page-write path (see above). */
export function overflowedHeap(failure: CommitFailure): boolean {
  return failure.message.includes('Attempting to write page');
}

/**
 * Writes `bytes` bytes to a file in `dir`, syncs it, and removes it: rejects if the directory
 * takes no durable write of that size. LMDB is not touched, so a disk still full fails here.
 */
export async function probeDir(dir: string, bytes: number): Promise<void> {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new Error(`wal: a disk probe of ${bytes} bytes`);
  const file = path.join(dir, DISK_PROBE_FILE);
  const handle = await fs.open(file, 'w');
  try {
    await handle.write(Buffer.alloc(bytes));
    await handle.sync();
  } finally {
    await handle.close();
    await fs.rm(file, { force: true });
  }
}
