// Waiting in tests: a plain sleep, and a bounded poll that says what it last saw when it gives up.

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `intervalMs` until it returns a value other than undefined, or fails after
 * `timeoutMs` with `describe()` (the last thing seen) in the message.
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  opts: { timeoutMs: number; intervalMs?: number; describe: () => string },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${opts.timeoutMs} ms: ${opts.describe()}`);
    await sleep(opts.intervalMs ?? 50);
  }
}
