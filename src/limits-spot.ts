// The limits of UBSCore's thread, its WAL and snapshots, and its log in PostgreSQL with the standby
// that follows it: the second half of src/limits.ts, which re-exports every one, so
// each limit is still imported from there and src/limits-check.ts still asserts every one.

const KIB = 1024;
const MIB = 1024 * KIB;
const HOUR_MS = 3_600_000;

// ---- UBSCore's thread ----

/** The largest `batchMax` accepted: commands (and so WAL records) per LMDB transaction; the maximum of UBS_BATCH_MAX. */
export const UBS_BATCH_COMMANDS_MAX = 100_000;
/** UBS_SNAPSHOT_EVERY_RECORDS's default: a snapshot per 100,000 records keeps a restart's replay short. */
export const UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT = 100_000;
/**
 * Replaying this few records at the next start costs about a millisecond, less than encoding and
 * syncing a snapshot of every account, so `close` skips the snapshot for a shorter tail.
 */
export const UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT = 1_000;
/** Measured about 4 ms per 20,000 accounts on the 2-core machine: well under the 50 ms budget. */
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT = 20_000;
/** Bounds the snapshot options so that no setting is effectively unbounded. */
export const UBS_SNAPSHOT_RECORDS_MAX = 1_000_000_000;
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX = 1_000_000;
/** A snapshot slice holds at least one account, or a snapshot would never end. */
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_MIN = 1;
/** `closeSnapshotRecordsMin`'s lowest value: a tail of one record or more is worth a snapshot at close. */
export const UBS_CLOSE_SNAPSHOT_TAIL_RECORDS_MIN = 1;
/**
 * Free bytes kept on the WAL's filesystem: more than one transaction can grow the file by (a full
 * batch's records, processed entries and B-tree pages, or a snapshot of a few million accounts).
 */
export const UBS_DISK_RESERVE_BYTES_DEFAULT = 256 * MIB;
/** 0 switches the free-space check off. */
export const UBS_DISK_RESERVE_BYTES_MIN = 0;
/** A petabyte: past any filesystem, so no reserve is effectively unbounded. */
export const UBS_DISK_RESERVE_BYTES_MAX = 2 ** 50;
/** Keys one op_seqs command may ask about. */
export const OP_SEQS_KEYS_MAX = 10_000;
/** Requests per `ubs.requests` message when the caller gives no bound. */
export const UBS_CLIENT_BATCH_MAX_DEFAULT = 1024;
/** Sends awaiting an answer per client when the caller gives no bound; beyond it, sends are refused. */
export const UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT = 100_000;
/** The longest timeout a send may ask for (one hour), so no timer is effectively unbounded. */
export const UBS_SEND_TIMEOUT_MS_MAX = HOUR_MS;
/**
 * The most young-generation heap UBSCore's thread may grow to. Group commit keeps every object
 * of a batch alive until its sync, and under V8's default cap they outlived scavenges and were
 * copied and promoted; measured with 8,192 in flight, the thread's GC pauses fell from about
 * 130 to 85 ms per 200,000 commands, and the process's CPU per command by about 5%. V8 still
 * grows the young generation only as it needs.
 */
export const UBS_WORKER_YOUNG_GENERATION_MB_MAX = 64;
/** The first wait between two attempts to write the WAL (LMDB, or PostgreSQL's log) again; it doubles up to the cap. */
export const UBS_RECOVERY_BACKOFF_BASE_MS = 50;
export const UBS_RECOVERY_BACKOFF_CAP_MS = 5_000;
/** UBSCore's log in PostgreSQL: snapshots kept in spot_snapshots, a failed copy's wait, close's wait for one (below UBS_CLOSE_TIMEOUT_MS). */
export const UBS_PG_SNAPSHOTS_KEPT = 2;
export const UBS_PG_SNAPSHOT_RETRY_MS = 30_000;
export const UBS_PG_LOG_CLOSE_WAIT_MS = 5_000;
/** Port messages held during one pause; beyond it they are dropped, and their callers retry. */
export const PAUSE_HELD_MESSAGES_MAX = 100_000;
/** The longest pause anyone may ask for. */
export const PAUSE_MS_MAX = 600_000;
/** How long close waits for a helper thread to stop (it looks at its flag every few thousand keys). */
export const FILTER_EXIT_WAIT_MS = 5_000;
/** Distinct assets an unpacker remembers as strings: a port meets a few assets a million times. */
export const UNPACKER_ASSETS_MAX = 256;

// ---- UBSCore's WAL and snapshots ----

/** The smallest filter: 1M keys in 2 MiB, so a young ledger does not rebuild it often. */
export const KEY_FILTER_KEYS_MIN = 1 << 20;
/**
 * The largest filter: 64M keys in 128 MiB. Past it the filter stops growing and answers "maybe"
 * more often: UBSCore reads LMDB more, and is never wrong.
 */
export const KEY_FILTER_KEYS_MAX = 1 << 26;
/** Records per block: at most about a megabyte (RECORD_BYTES_MAX each), like a snapshot chunk. */
export const WAL_BLOCK_RECORDS_MAX = 8_192;
/**
 * WAL records deleted per prune transaction: a few ms of B-tree work between two batches. Whole
 * blocks are deleted, so a transaction may hold one block more than this.
 */
export const WAL_PRUNE_RECORDS_PER_TXN_MAX = 20_000;
/**
 * Processed-set entries read, and those prunable deleted, per step of a retention pass:
 * one LMDB transaction between two batches. A step reads the seq index from where the last one
 * stopped, and each entry it names (wal/processed-prune.ts). Measured on the 2-core machine over
 * 200,000 entries (keys of 28 bytes, 1,000 kept): 1,024 per step read and decoded on UBSCore's
 * thread in 1.6 ms (p99 3.2 ms), their transaction then durable in a few ms more, which the next
 * batch waits for; a pass prunes about 200,000 entries a second when idle.
 */
export const PRUNE_STEP_ENTRIES = 1_024;
/**
 * Processed-set entries indexed per transaction when an environment written before the seq index
 * (wal/processed-index.ts) is opened: a one-time build at start, a few MB of pages per commit.
 */
export const PROCESSED_INDEX_BUILD_ENTRIES = 50_000;
/** The largest chunk value: big enough to make few LMDB entries, small enough to checksum in ~1 ms. */
export const SNAPSHOT_CHUNK_BYTES_MAX = MIB;
/** Distinct assets remembered by a RecordReader; a replay meets a few assets a million times. */
export const READER_ASSETS_MAX = 256;
/** spot_log blocks per query and per LMDB transaction of a catch-up or rebuild: <= 1 MiB each, a few MiB per page usually. */
export const SPOT_LOG_PAGE_BLOCKS = 128;
/** Processed-set entries per query and per LMDB transaction of a rebuild or a seed: about 1 MiB of rows. */
export const SPOT_PROCESSED_PAGE_ROWS = 10_000;
export const SPOT_LOG_ARCHIVE_INTERVAL_MS = 5 * 60_000; // how often (and at start) spot_log is archived through the oldest snapshot kept

// ---- A standby ----

/** How often a standby reads spot_log for the owner's new blocks by default: the lag it adds at most. */
export const STANDBY_POLL_MS_DEFAULT = 50;
export const STANDBY_POLL_MS_MIN = 5;
/** Past ten seconds a standby would start its takeover far behind the owner. */
export const STANDBY_POLL_MS_MAX = 10_000;
/**
 * spot_log blocks read and handed to UBSCore per follow call: up to 64 blocks of WAL_BLOCK_RECORDS_MAX
 * records is at most about 64 MiB in flight; a group commit's block is usually far smaller.
 */
export const STANDBY_READ_BLOCKS_MAX = 64;

// ---- The processed set's retention ----

/**
 * PROCESSED_RETENTION_S: a week by default, at most ten years, at least 30 s: still far above how
 * long a command stays in flight (a retry racing a transfer's last step is sent within
 * milliseconds of it), and short enough for the 3-minute soak of CI to prune many times.
 */
export const PROCESSED_RETENTION_S_DEFAULT = 7 * 24 * 3600;
export const PROCESSED_RETENTION_S_MIN = 30;
export const PROCESSED_RETENTION_S_MAX = 10 * 365 * 24 * 3600;
/** PROCESSED_PRUNE_INTERVAL_S: a pass (and a tick of the seq clock) a minute by default, at most one an hour. */
export const PROCESSED_PRUNE_INTERVAL_S_DEFAULT = 60;
export const PROCESSED_PRUNE_INTERVAL_S_MIN = 1;
export const PROCESSED_PRUNE_INTERVAL_S_MAX = 3600;
/** spot_processed rows read, and at most deleted, per statement of a retention pass: about 200 KiB of keys. */
export const SPOT_PROCESSED_DELETE_ROWS = 5_000;
/** How long a stop waits for a retention pass in flight before going on (UBSCore's close ends its prune). */
export const RETENTION_STOP_WAIT_MS = 5_000;
