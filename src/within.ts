// A bounded wait: the first of some work's answer and a deadline. Comlink, a thread's exit and a
// drive have no timeout of their own; every wait on one of them is bounded through here, and the
// timer is cleared as soon as the work answers, so no timer outlives the wait.

/** `work`'s value if it settles within `ms`, else `late`; the work itself carries on either way. */
export async function within<T, L>(work: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), ms);
    // The wait alone never keeps a thread alive: what it waits for does, if anything.
    timer.unref();
  });
  try {
    return await Promise.race([work, bound]);
  } finally {
    clearTimeout(timer);
  }
}
