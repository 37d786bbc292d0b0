// A helper thread of UBSCore: reads every durable processed-set key into a key filter and hands
// the filter's bits back. Reading a key from LMDB costs one or two microseconds, so after a
// restart with millions of keys the scan would take seconds of UBSCore's own thread; here it
// takes none. It only reads: lmdb-js shares one environment between the threads of a process,
// counting its users, so this thread's close leaves UBSCore's handle open.

import { parentPort, workerData } from 'node:worker_threads';
import { KeyFilter } from '../../wal/key-filter.js';
import { openWalDatabases } from '../../wal/log.js';
import { opKeyOfProcessedKey } from '../../wal/processed-key.js';
import type { FilterBuildInput, FilterBuildOutcome } from '../../src/ubscore/processed/processed.js';

/** Keys read between two looks at the stop flag. */
const STOP_CHECK_EVERY_KEYS = 4_096;

/** The filter of every durable key, or null when UBSCore asked the build to stop. */
async function build(data: FilterBuildInput): Promise<FilterBuildOutcome | null> {
  const stopped = () => Atomics.load(data.stop, 0) === 1;
  if (stopped()) return null;
  const { env, processed } = openWalDatabases(data.walDir);
  try {
    const filter = new KeyFilter(data.capacityKeys, data.keysMin);
    let keys = 0;
    for (const key of processed.getKeys()) {
      if (keys % STOP_CHECK_EVERY_KEYS === 0 && stopped()) return null;
      // The filter holds the ledger's names of entries, the text every lookup asks about.
      const opKey = opKeyOfProcessedKey(key);
      if (opKey === null) throw new Error(`processed key ${key.toString('hex')} names no operation`);
      filter.add(opKey);
      keys++;
    }
    return { kind: 'filter.built', words: filter.bits, keys };
  } finally {
    await env.close();
  }
}

/**
 * This thread is never terminated: a terminate that lands inside one of lmdb's native calls (its
 * addon's registration, an environment's open) aborts the whole process (FATAL ERROR napi_throw,
 * lmdb 3.5.6). UBSCore sets the shared stop flag instead, and the thread ends by itself.
 */
function start(): void {
  const parent = parentPort;
  if (parent === null) throw new Error('ubscore-filter-worker must run in a worker thread');
  const data = workerData as FilterBuildInput;
  build(data).then(
    (event) => {
      if (event !== null) parent.postMessage(event, event.kind === 'filter.built' ? [event.words.buffer] : []);
    },
    (error: unknown) => parent.postMessage({ kind: 'filter.failed', message: String(error) } satisfies FilterBuildOutcome),
  );
}

start();
