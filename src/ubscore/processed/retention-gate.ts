// One at a time: a conservation check and a retention plan. A check asks UBSCore when
// each operation of the transfers and movements written since its clock read T0 was applied; a
// plan taken after T0 could drop the key of one that became final in between, and the check
// would take the forgotten operation for one never applied (a false difference, which halts).
// A plan taken before T0 is harmless whatever its prune does meanwhile: everything the check asks
// about was unfinished, so kept, in that plan's snapshot. So the check (T0 to its answers) and
// the plan's read run through this gate, never side by side; the prune itself does not wait.

export class PlanGate {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` once every earlier one has settled; answers its result. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(() => work());
    this.tail = result.catch(() => undefined);
    return result;
  }
}
