// "Flush once per event-loop turn": whatever a turn gathers (calls, messages, commands) leaves
// together. The first request of a turn schedules the flush with setImmediate, which runs after
// every microtask of the turn, so requests made in promise continuations of that turn still
// share it; later requests in the same turn are already covered. The flag is cleared before the
// flush runs, so a flush (or what it starts) may request the next turn's. No timer, no fixed
// wait. Used by the PostgreSQL batcher, the coordinator mailboxes, the UBSCore client and actor.

/** A function that asks for `flush` to run once after the current turn, however often it is called. */
export function oncePerTurn(flush: () => void): () => void {
  let queued = false;
  return function requestFlush(): void {
    if (queued) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      flush();
    });
  };
}
