// What UBSCore's writer needs when LMDB cannot write (a full disk): the real cause of a failed
// commit, and a probe write that says when the disk takes writes again.
//
// Measured with lmdb 3.5.6 on a full tmpfs (useWritemap false, so pages go out by pwrite): a
// commit that cannot extend the file fails with EIO (LMDB maps a short pwrite to EIO) or ENOSPC;
// LMDB aborts the transaction, and the environment stays usable: reads see the last committed
// state, and writes succeed again once space returns. Only a failed meta-page write would leave
// the environment in MDB_PANIC, which a close and reopen clears; the actor reopens it anyway.
// lmdb-js rejects a failed write with a generic Error whose `commitError` promise holds LMDB's
// error, and rejects one more promise of its own that nobody can observe (the worker ignores
// that one, see actors/ubscore-worker.ts).

import type { WalDatabases } from './log.js';

/** LMDB's "environment had a fatal error" code: nothing more can be written until it is reopened. */
export const MDB_PANIC = -30795;
/** The `meta` key a probe writes and removes again; nothing else uses it. */
export const DISK_PROBE_KEY = 'diskProbe';

/** Why a write failed: LMDB's message and code (an errno, or an MDB_ code), when lmdb-js gave them. */
export type CommitFailure = { readonly message: string; readonly code: number | string | null };

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
  if (!isCommitFailure(error)) return { message: error instanceof Error ? error.message : String(error), code: codeOf(error) };
  try {
    await error.commitError;
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return { message: `${error.message}: ${message}`, code: codeOf(cause) };
  }
  return { message: error.message, code: null };
}

/**
 * Writes `bytes` bytes under DISK_PROBE_KEY durably, then removes them durably; rejects if
 * either commit fails. A probe as large as a few batches grows the file when LMDB has no free
 * pages, so it fails while the disk is full; once it succeeds, its freed pages are room for the
 * next batches, so serving does not start on a disk that fails again at the first batch.
 */
export async function probeDisk({ env, meta }: WalDatabases, bytes: number): Promise<void> {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new Error(`wal: a disk probe of ${bytes} bytes`);
  const payload = Buffer.alloc(bytes);
  const put = await env.batch(() => {
    void meta.put(DISK_PROBE_KEY, payload);
  });
  if (!put) throw new Error('wal: the disk probe was not written');
  const removed = await env.batch(() => {
    void meta.remove(DISK_PROBE_KEY);
  });
  if (!removed) throw new Error('wal: the disk probe was not removed');
}
