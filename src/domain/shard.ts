// Which coordinator shard owns a user's transfers: one rule for the router and the recovery scan.

export function shardOfUser(userId: bigint, shards: number): number {
  if (!Number.isSafeInteger(shards) || shards < 1) throw new Error(`shardOfUser: shards must be a positive integer, got ${shards}`);
  return Number(userId % BigInt(shards));
}
