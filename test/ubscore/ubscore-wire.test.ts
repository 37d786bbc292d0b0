// Proves the packed request form on UBSCore's ports: every command arrives exactly as it was
// sent and in order, whether packed or carried as an object; a command the wire cannot carry
// exactly travels as an object; and a malformed message stops with a reason, never a throw.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { UbsPortMessage } from '../../actors/protocol.js';
import { RequestPacker, RequestUnpacker } from '../../actors/ubscore/wire.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';

/** Packs `commands` with ids 1.., unpacks them, and returns what arrived. */
function roundTrip(commands: readonly UbsCommand[]): { id: number; command: unknown }[] {
  const packer = new RequestPacker();
  commands.forEach((command, i) => {
    packer.add(i + 1, command);
  });
  const message = structuredClone(packer.take());
  const arrived: { id: number; command: unknown }[] = [];
  assert.is(
    new RequestUnpacker().unpack(message, (id, command) => arrived.push({ id, command })),
    null,
  );
  return arrived;
}

const keyed: UbsCommand[] = [
  { kind: 'transfer_op', op: 'DEPOSIT', reqId: '01HZX3K4M5N6P7Q8R9S0T1V2W3', userId: 1n, asset: 'BTC', amount: 1n },
  { kind: 'transfer_op', op: 'WITHDRAW', reqId: 'k', userId: 2n ** 63n - 1n, asset: 'A'.repeat(16), amount: 2n ** 64n - 1n },
  { kind: 'transfer_op', op: 'REFUND', reqId: 'r'.repeat(64), userId: 2n ** 53n + 1n, asset: 'USDT', amount: 2n ** 53n },
  { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref: 'ref-1', userId: 0n, asset: '', amount: 0n },
  { kind: 'external_op', op: 'EXTERNAL_WITHDRAW', ref: '', userId: 3n, asset: 'usdt', amount: 5n },
  // A wrong op for the kind is carried as sent: UBSCore, not the wire, refuses it.
  { kind: 'transfer_op', op: 'EXTERNAL_DEPOSIT' as 'DEPOSIT', reqId: 'x', userId: 4n, asset: 'ETH', amount: 6n },
];

test('keyed operations round-trip exactly, packed', () => {
  const packer = new RequestPacker();
  keyed.forEach((command, i) => {
    packer.add(i + 1, command);
  });
  assert.is(packer.take().others.length, 0, 'every one was packed');
  assert.equal(
    roundTrip(keyed),
    keyed.map((command, i) => ({ id: i + 1, command })),
  );
});

test('what the wire cannot carry exactly travels as an object, in its place in the order', () => {
  const odd = [
    // Packed as latin1, 'Ł' (U+0141) would arrive as 'A': the wire must never turn a bad key into a good one.
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 'Ł1', userId: 1n, asset: 'BTC', amount: 1n },
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 'é', userId: 1n, asset: 'BTC', amount: 1n },
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 'k', userId: -1n, asset: 'BTC', amount: 1n },
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 'k', userId: 1n, asset: 'BTC', amount: 2n ** 64n },
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 'k'.repeat(256), userId: 1n, asset: 'BTC', amount: 1n },
    { kind: 'transfer_op', op: 'SPEND', reqId: 'k', userId: 1n, asset: 'BTC', amount: 1n },
    { kind: 'transfer_op', op: 'DEPOSIT', reqId: 7, userId: 1n, asset: 'BTC', amount: 1n },
    { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref: 'r', userId: 1, asset: 'BTC', amount: 1n },
    { kind: 'balances', userId: 5n },
    { kind: 'op_seqs', keys: [{ op: 'DEPOSIT', key: 'a' }] },
    { kind: 'nonsense' },
  ] as unknown as UbsCommand[];
  const interleaved = odd.flatMap((command, i) => [command, keyed[i % keyed.length] as UbsCommand]);
  const packer = new RequestPacker();
  interleaved.forEach((command, i) => {
    packer.add(i + 1, command);
  });
  assert.is(packer.take().others.length, odd.length);
  assert.equal(
    roundTrip(interleaved),
    interleaved.map((command, i) => ({ id: i + 1, command })),
  );
});

test('a malformed message stops with a reason after the requests before the damage, and never throws', () => {
  const packer = new RequestPacker();
  keyed.slice(0, 3).forEach((command, i) => {
    packer.add(i + 1, command);
  });
  const message = packer.take();
  const visit = (): void => undefined;
  const unpacker = new RequestUnpacker();
  const cases: [string, UbsPortMessage][] = [
    ['count too high', { ...message, count: 4 }],
    ['count too low', { ...message, count: 2 }],
    ['an object entry without its object', { ...message, others: [{ id: 9, command: { kind: 'balances', userId: 1n } }] }],
    ['not bytes', { ...message, bytes: 'nope' as unknown as Uint8Array<ArrayBuffer> }],
  ];
  for (let length = 0; length < message.bytes.length; length++) {
    cases.push([`cut to ${length} bytes`, { ...message, bytes: message.bytes.slice(0, length) }]);
  }
  for (let i = 0; i < message.bytes.length; i++) {
    const bytes = message.bytes.slice();
    bytes[i] = 0xff;
    cases.push([`byte ${i} set to 0xff`, { ...message, bytes }]);
  }
  for (const [label, bad] of cases) {
    let reason: string | null = null;
    assert.not.throws(() => {
      reason = unpacker.unpack(bad, visit);
    }, label);
    // A byte of an id or an amount may change to another valid value: the core checks those.
    if (!label.startsWith('byte')) assert.ok(reason !== null, label);
  }
});

test('the packer grows for a large message and starts empty after take', () => {
  const packer = new RequestPacker();
  const many = Array.from(
    { length: 5_000 },
    (_, i): UbsCommand => ({
      kind: 'external_op',
      op: 'EXTERNAL_DEPOSIT',
      ref: `bench-${i}-${'x'.repeat(40)}`,
      userId: BigInt(i + 1),
      asset: 'USDT',
      amount: 1n,
    }),
  );
  many.forEach((command, i) => {
    packer.add(i + 1, command);
  });
  assert.is(packer.size, many.length);
  const arrived: unknown[] = [];
  assert.is(
    new RequestUnpacker().unpack(packer.take(), (_id, command) => arrived.push(command)),
    null,
  );
  assert.equal(arrived, many);
  assert.is(packer.size, 0);
  assert.equal(packer.take().count, 0);
});

test.run();
