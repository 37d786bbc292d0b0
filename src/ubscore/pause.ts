// The pause a backup's cut needs (src/backup/take.ts): while it holds, UBSCore decides nothing;
// the port messages that arrive wait here, in arrival order, undecided, and are decided when the
// pause lifts. A caller whose answer is late reads it as "unknown" and retries idempotently, as
// after any timeout. The pause always ends: at `resume`, or by itself after its time limit.

import { PAUSE_HELD_MESSAGES_MAX, PAUSE_MS_MAX } from '../limits.js';

/** A message held with the client (`To`, a thread's port to actors/) that sent it. */
type HeldMessage<To, Message> = { readonly to: To; readonly message: Message };

export class PauseGate<To, Message> {
  /** Null when not paused. */
  private held: HeldMessage<To, Message>[] | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Whether the last pause lifted by itself, not by `release` from the caller. */
  private expiredLast = false;

  get paused(): boolean {
    return this.held !== null;
  }

  /** Starts a pause that calls `onExpire` after `pauseMs` unless released first. */
  start(pauseMs: number, onExpire: () => void): void {
    if (this.held !== null) throw new Error('ubscore: pause while paused');
    if (!Number.isSafeInteger(pauseMs) || pauseMs < 1 || pauseMs > PAUSE_MS_MAX)
      throw new Error(`ubscore: pause of ${pauseMs} ms is outside 1..${PAUSE_MS_MAX}`);
    this.held = [];
    this.expiredLast = false;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.expiredLast = true;
      onExpire();
    }, pauseMs);
  }

  /** 'pass' when not paused (decide it now); else the message is held, or dropped past the bound. */
  hold(to: To, message: Message): 'pass' | 'held' | 'dropped' {
    if (this.held === null) return 'pass';
    if (this.held.length >= PAUSE_HELD_MESSAGES_MAX) return 'dropped';
    this.held.push({ to, message });
    return 'held';
  }

  /** Ends the pause (if any) and hands back what it held, oldest first. */
  release(): { readonly held: readonly HeldMessage<To, Message>[]; readonly expired: boolean } {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const held = this.held ?? [];
    this.held = null;
    return { held, expired: this.expiredLast };
  }
}
