// The pause a backup's cut needs (src/backup/take.ts): while it holds, UBSCore decides nothing;
// the port messages that arrive wait here, in arrival order, undecided, and are decided when the
// pause lifts. A caller whose answer is late reads it as "unknown" and retries idempotently, as
// after any timeout. The pause always ends: at `resume`, or by itself after its time limit.

import type { MessagePort } from 'node:worker_threads';
import type { UbsPortMessage } from '../protocol.js';
import { PAUSE_HELD_MESSAGES_MAX, PAUSE_MS_MAX } from '../../src/limits.js';

type HeldMessage = { readonly port: MessagePort; readonly message: UbsPortMessage };

export class PauseGate {
  /** Null when not paused. */
  private held: HeldMessage[] | null = null;
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
  hold(port: MessagePort, message: UbsPortMessage): 'pass' | 'held' | 'dropped' {
    if (this.held === null) return 'pass';
    if (this.held.length >= PAUSE_HELD_MESSAGES_MAX) return 'dropped';
    this.held.push({ port, message });
    return 'held';
  }

  /** Ends the pause (if any) and hands back what it held, oldest first. */
  release(): { readonly held: readonly HeldMessage[]; readonly expired: boolean } {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const held = this.held ?? [];
    this.held = null;
    return { held, expired: this.expiredLast };
  }
}
