// The parts of the service that run on their own threads, as src/ sees them: UBSCore and the
// coordinator shards, each started by a function the process entry gives to startService
// (actors/threads.ts). src/ knows what they answer, never how they are run.

import type { CoordinatorShards, CoordinatorStartOptions } from './coordinator/shards.js';
import type { UbsControlApi, UbsCoreOptions, UbsHealthEvent, UbsReady, UbsSend } from './ubscore/control.js';

/** A client of UBSCore's commands, for the main thread. */
export type UbsCommandClient = { readonly send: UbsSend; close(): void };

export type UbsCore = {
  readonly control: UbsControlApi;
  readonly ready: UbsReady;
  /** A new client of the core's commands. */
  openClient(): UbsCommandClient;
  /** Calls `listener` once the core has stopped, with its exit code. */
  onExit(listener: (code: number) => void): void;
  /** Stops the core at once, whatever it is doing (after `control.close`, or when that did not answer). */
  terminate(): Promise<void>;
};

/** Starts the parts; `Core` is the starter's own handle on UBSCore, which the shards connect to. */
export type ServiceThreads<Core extends UbsCore> = {
  startUbsCore(options: UbsCoreOptions, onEvent: (event: UbsHealthEvent) => void): Promise<Core>;
  startCoordinators(options: CoordinatorStartOptions, ubs: Core): Promise<CoordinatorShards>;
};
