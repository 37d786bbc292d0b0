// A capture of the spot ledger at one sequence number, in O(1), by copy-on-write: an account's
// value at the capture is saved the first time a later record changes it, so the accounts can be
// visited in slices between batches while commands go on (src/ubscore/durability/snapshotter.ts encodes them).
// Also the account and user keys the ledger's maps share with it.

import type { AccountStatus } from '../../domain/types.js';
import type { AccountVisitor } from '../../domain/spot-records.js';

/** `createdSeq` is the record that created the account (0 for one restored from a snapshot). */
export type Account = { available: bigint; status: AccountStatus; readonly createdSeq: number };
type AccountValue = { readonly available: bigint; readonly status: AccountStatus };

/**
 * The key of a user in the ledger's map: the id as a JS number when it is a safe integer (every
 * realistic id), else the bigint itself. V8 hashes a number key several times faster than a
 * bigint one, and the map is read for every command and every replayed record. The mapping is
 * one-to-one: a number never equals a bigint as a Map key, and an id is always keyed the same way.
 */
export type UserKey = number | bigint;
const SAFE_USER_ID_MAX = BigInt(Number.MAX_SAFE_INTEGER);

export function userKeyOf(userId: bigint): UserKey {
  return userId <= SAFE_USER_ID_MAX ? Number(userId) : userId;
}

export function userIdOf(key: UserKey): bigint {
  return typeof key === 'number' ? BigInt(key) : key;
}

/** The copy-on-write state of an open capture: values at `seq` of the accounts changed since. */
export type Freeze = { readonly seq: number; readonly saved: Map<Account, AccountValue> };

/**
 * The accounts as they stood at `seq`, read in slices. It walks the live maps (a Map iterator
 * stays valid while entries are added, and accounts are never removed), skips the accounts
 * created after `seq`, and reads the saved value of every account changed since.
 */
export class AccountCapture {
  private visited = 0;
  private userId = 0n;
  private assets: Iterator<[string, Account]> | null = null;
  private finished = false;
  private released = false;

  constructor(
    readonly seq: number,
    readonly accountCount: number,
    private readonly users: Iterator<[UserKey, Map<string, Account>]>,
    private readonly freeze: Freeze,
  ) {}

  /** Visits at most `limit` accounts; returns true once every account at `seq` was visited. */
  visit(limit: number, visitor: AccountVisitor): boolean {
    if (this.released) throw new Error('ledger: a capture was read after its release');
    let count = 0;
    while (!this.finished && count < limit) {
      if (this.assets === null) {
        const user = this.users.next();
        if (user.done === true) {
          this.finish();
          break;
        }
        this.userId = userIdOf(user.value[0]);
        this.assets = user.value[1].entries();
      }
      const entry = this.assets.next();
      if (entry.done === true) {
        this.assets = null;
        continue;
      }
      const [asset, account] = entry.value;
      if (account.createdSeq > this.seq) continue;
      const value = this.freeze.saved.get(account) ?? account;
      visitor(this.userId, asset, value.available, value.status);
      this.visited++;
      count++;
    }
    return this.finished;
  }

  /** Called by the ledger only. */
  release(): void {
    this.released = true;
  }

  private finish(): void {
    // Pair assertion: the walk must meet exactly the accounts the ledger counted at `seq`.
    if (this.visited !== this.accountCount) {
      throw new Error(`ledger: capture at seq ${this.seq} visited ${this.visited} accounts, ${this.accountCount} existed`);
    }
    this.finished = true;
  }
}
