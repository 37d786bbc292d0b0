// Requests per user counted in fixed windows, in memory, for the rate limit and the frequency
// watch. The map of users is bounded: past USERS_TRACKED_MAX, windows that have ended are
// dropped, and if every tracked user is active, the oldest is forgotten rather than grow.

import { USERS_TRACKED_MAX } from '../../limits.js';

type UserWindow = { readonly start: number; count: number; alerted: boolean };

export class UserWindows {
  private readonly windows = new Map<bigint, UserWindow>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `user` and answers the window it fell in. */
  hit(user: bigint): UserWindow {
    const t = this.now();
    let window = this.windows.get(user);
    if (window === undefined || t - window.start >= this.windowMs) {
      if (window === undefined && this.windows.size >= USERS_TRACKED_MAX) this.sweep(t);
      window = { start: t, count: 0, alerted: false };
      this.windows.set(user, window);
    }
    window.count += 1;
    return window;
  }

  private sweep(t: number): void {
    for (const [user, window] of this.windows) if (t - window.start >= this.windowMs) this.windows.delete(user);
    if (this.windows.size >= USERS_TRACKED_MAX) this.windows.delete(this.windows.keys().next().value as bigint);
  }
}
