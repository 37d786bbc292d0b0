// A start refused because another process owns the ledger, or because the two stores are not
// the same ledger. The process exits non-zero with the message; nothing was changed.

export class OwnershipError extends Error {
  override readonly name = 'OwnershipError';
}
