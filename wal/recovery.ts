// UBSCore's way back from a disk that takes no writes. After a failed WAL write RAM is ahead of
// disk, so the actor answers every command `unavailable` and hands the rest to a DiskRecovery:
// rebuild the state from disk (the start-up path: snapshot plus WAL replay, processed set
// reopened), then probe the disk with a real durable write; on failure wait with capped
// exponential backoff and try again, for ever; on success the actor serves again.

import { backoffMs } from '../src/backoff.js';
import { MDB_PANIC, commitFailure, diskShortfall, probeDir } from './disk.js';
import { UBS_RECOVERY_BACKOFF_BASE_MS, UBS_RECOVERY_BACKOFF_CAP_MS } from '../src/limits.js';

/** The probe file's size: it shows the directory takes a durable write; the reserve check guards the space. */
const UBS_DISK_PROBE_BYTES = 64 * 1024;

/** The probe: enough free space above the reserve, and a synced file write in the WAL's directory. */
export async function probeWalDir(walDir: string, reserveBytes: number): Promise<void> {
  const shortfall = diskShortfall(walDir, reserveBytes);
  if (shortfall !== null) throw new Error(shortfall);
  await probeDir(walDir, UBS_DISK_PROBE_BYTES);
}

type RecoveryHooks = {
  /** Throws away the state and opens it again from disk. Called with no write in flight. */
  readonly rebuild: () => Promise<void>;
  /** The free-space check and one durable probe write beside the environment; rejects if either fails. */
  readonly probe: () => Promise<void>;
  /** The probe succeeded after `attempts` attempts: serve again. */
  readonly recovered: (attempts: number) => void;
  readonly log: (message: string) => void;
};

export class DiskRecovery {
  private attempts = 0;
  /** A rebuild is owed until one succeeds, and again when the environment reports a panic. */
  private rebuildOwed = true;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly hooks: RecoveryHooks) {}

  start(): void {
    this.attempt();
  }

  /** Stops retrying and waits for an attempt in flight, so the caller may close the environment. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private attempt(): void {
    this.timer = null;
    if (this.stopped) return;
    this.running = this.tryOnce().finally(() => {
      this.running = null;
    });
  }

  private async tryOnce(): Promise<void> {
    this.attempts++;
    let stage = 'rebuilding the state from disk';
    try {
      if (this.rebuildOwed) {
        await this.hooks.rebuild();
        this.rebuildOwed = false;
      }
      stage = 'the disk probe';
      await this.hooks.probe();
    } catch (error) {
      const failure = await commitFailure(error);
      // A probe that failed like a full disk leaves the environment usable; a panic does not.
      if (failure.code === MDB_PANIC) this.rebuildOwed = true;
      const waitMs = backoffMs({ baseMs: UBS_RECOVERY_BACKOFF_BASE_MS, capMs: UBS_RECOVERY_BACKOFF_CAP_MS }, this.attempts - 1);
      this.hooks.log(`${stage} failed (attempt ${this.attempts}, next in ${waitMs} ms): ${failure.message} (code ${String(failure.code)})`);
      if (!this.stopped) this.timer = setTimeout(() => this.attempt(), waitMs);
      return;
    }
    if (!this.stopped) this.hooks.recovered(this.attempts);
  }
}
