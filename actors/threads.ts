// The thread starters the main thread gives to startService (src/threads.ts): UBSCore on its own
// thread, and the coordinator shards, each shard on its own thread with its own port on UBSCore.

import type { MessagePort } from 'node:worker_threads';
import type { ServiceThreads, UbsCore } from '../src/threads.js';
import { CoordinatorPools } from './coordinator/pool.js';
import { startUbsCore, UbsClient } from './ubscore/client.js';

/** UBSCore's thread as the service holds it, plus the ports the shards connect through. */
type UbsCoreThread = UbsCore & { connect(): MessagePort };

export const serviceThreads: ServiceThreads<UbsCoreThread> = {
  async startUbsCore(options, onEvent) {
    const handle = await startUbsCore(options, onEvent);
    return {
      control: handle.control,
      ready: handle.ready,
      connect: () => handle.connect(),
      openClient: () => new UbsClient(handle.connect(), {}),
      onExit: (listener) => {
        handle.worker.once('exit', listener);
      },
      terminate: async () => {
        await handle.worker.terminate();
      },
    };
  },
  startCoordinators: (options, ubs) => CoordinatorPools.start({ ...options, connectUbs: () => ubs.connect() }),
};
