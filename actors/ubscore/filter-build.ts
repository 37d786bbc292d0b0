// The processed set's filter build on a helper thread (filter-worker.ts): what
// src/ubscore/processed/processed.ts starts, so that reading millions of keys costs UBSCore's
// own thread nothing.

import { Worker } from 'node:worker_threads';
import type { StartFilterBuild } from '../../src/ubscore/processed/processed.js';

export const startFilterBuild: StartFilterBuild = (input, done) => {
  const worker = new Worker(new URL('./filter-worker.js', import.meta.url), { workerData: input });
  worker.on('message', done);
  worker.once('error', (error: Error) => done({ kind: 'filter.failed', message: error.message }));
  // A helper still reading must not hold the process open when UBSCore stops.
  worker.unref();
  return {
    ended: () => {
      // Referenced while waited for: the thread's event loop must not end under this wait.
      worker.ref();
      return new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    },
  };
};
