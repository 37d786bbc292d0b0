// Opaque keyset cursors for the list endpoints: base64url of a prefix naming the list and the id
// of the last row given, so a cursor of one list is refused by another, and the rows written
// while a client pages appear only on a fresh first page, never shifting the pages after it.

import { ID_TEXT } from '../../domain/checks.js';

/** Every cursor this service hands out is base64url text of at most this shape. */
export const CURSOR = /^[A-Za-z0-9_-]{1,64}$/;

type KeysetCursor = {
  readonly encode: (id: string | bigint) => string;
  /** The id a cursor names, or null for anything this list did not hand out. */
  readonly decode: (cursor: string) => bigint | null;
};

export function keysetCursor(prefix: string): KeysetCursor {
  return {
    encode: (id) => Buffer.from(prefix + String(id)).toString('base64url'),
    decode: (cursor) => {
      if (!CURSOR.test(cursor)) return null;
      const text = Buffer.from(cursor, 'base64url').toString('utf8');
      if (!text.startsWith(prefix)) return null;
      const id = text.slice(prefix.length);
      return ID_TEXT.test(id) ? BigInt(id) : null;
    },
  };
}
