// CRC-32C (Castagnoli), table driven. Node 20 has no zlib.crc32, and the WAL needs a checksum
// that catches torn or flipped bytes; Castagnoli detects more error patterns than IEEE CRC-32.

/** The reflected Castagnoli polynomial. */
const POLYNOMIAL_REFLECTED = 0x82f63b78;

const TABLE: Uint32Array = buildTable();

function buildTable(): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) {
      c = c & 1 ? (c >>> 1) ^ POLYNOMIAL_REFLECTED : c >>> 1;
    }
    table[n] = c >>> 0;
  }
  return table;
}

/** CRC-32C of bytes[start, end), as an unsigned 32-bit integer. */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  if (!(start >= 0 && start <= end && end <= bytes.length)) {
    throw new Error(`crc32c: range [${start}, ${end}) outside ${bytes.length} bytes`);
  }
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) {
    // Both indexes are in range by construction; the casts only silence noUncheckedIndexedAccess.
    crc = (TABLE[(crc ^ (bytes[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}
