// Proves new req_ids are well-formed ULIDs that the database accepts, unique, and ordered by time.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newReqId } from '../../src/http/req-ids.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

test('100,000 new req_ids are ULIDs (the req_id CHECK of transfers_tb) and all different', () => {
  const ids = Array.from({ length: 100_000 }, newReqId);
  assert.ok(ids.every((id) => ULID.test(id)));
  assert.is(new Set(ids).size, ids.length);
});

test('a later req_id sorts after an earlier one: its time part comes first', async () => {
  const before = newReqId();
  await new Promise((resolve) => setTimeout(resolve, 5));
  const after = newReqId();
  assert.ok(before.slice(0, 10) < after.slice(0, 10));
  assert.ok(before < after);
});

test('the random part uses every one of the 32 characters (no bias from the pooled bytes)', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2_000; i++) for (const c of newReqId().slice(10)) seen.add(c);
  assert.is(seen.size, 32);
});

test.run();
