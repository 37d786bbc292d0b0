// New req_ids: ULIDs, time-ordered, so the recovery scan walks unfinished transfers in creation
// order. ulid's own generator asks the OS for one random byte per character (16 calls per id,
// a tenth of the HTTP thread under load); this draws the same bytes, with the same uniform
// spread, from a pool the OS refills 4 KiB at a time.

import { randomFillSync } from 'node:crypto';
import { ulid } from 'ulid';

const RANDOM_POOL_BYTES = 4_096;
const pool = Buffer.alloc(RANDOM_POOL_BYTES);
let next = RANDOM_POOL_BYTES;

/** A fraction in [0, 1) from one random byte, as ulid's default generator makes it. */
function pooledFraction(): number {
  if (next === RANDOM_POOL_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  const byte = pool[next] as number;
  next += 1;
  return byte / 256;
}

export function newReqId(): string {
  return ulid(undefined, pooledFraction);
}
