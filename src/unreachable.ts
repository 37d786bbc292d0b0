// The compile-time exhaustiveness guard for switches over a union's `kind`: a new member that no
// case handles makes the call fail to compile; reached at run time, it is a programmer error.

export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
}
