// Everything the benchmark starts (service children, servers, temporary directories) registers
// how to undo itself here, so a failure or Ctrl-C in the middle still leaves nothing behind.

type Undo = () => Promise<void>;

/** Undo steps not yet finished; a running one stays listed so a second caller waits for it. */
const pending = new Set<Undo>();

/**
 * Registers an undo step and returns a function that runs it once: every later call, and
 * cleanupAll, answers the same promise, so nobody exits while a step is half done.
 */
export function registerCleanup(undo: Undo): () => Promise<void> {
  let running: Promise<void> | null = null;
  const once: Undo = () => {
    running ??= undo().finally(() => pending.delete(once));
    return running;
  };
  pending.add(once);
  return once;
}

/** Runs (or waits for) every registered undo step, newest first; one failing step does not stop the others. */
export async function cleanupAll(log: (line: string) => void): Promise<void> {
  while (pending.size > 0) {
    for (const undo of [...pending].reverse()) {
      await undo().catch((error: unknown) => log(`cleanup step failed: ${String(error)}`));
    }
  }
}
