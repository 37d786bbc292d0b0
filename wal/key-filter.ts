// A Bloom filter over processed-set keys: "certainly absent" or "maybe present". UBSCore asks it
// before reading LMDB, because nearly every command carries a key never seen before, and proving
// that in LMDB's B-tree cost about a microsecond a command, a quarter of UBSCore's time per
// command (measured: 3.4 against 4.6 µs). A false "maybe" costs one LMDB read; a false "absent"
// would apply a repeat twice, so the filter is only ever asked once it holds every key
// (src/ubscore/processed/processed.ts), and keys are only ever added, never removed: a key the
// retention deletes from the processed set stays in the filter, a false "maybe", until
// the filter is rebuilt for the live keys.

import { KEY_FILTER_KEYS_MAX, KEY_FILTER_KEYS_MIN } from '../src/limits.js';

/** Bits per key at capacity: with KEY_FILTER_PROBES probes in one block, about 1% false "maybe" answers. */
const KEY_FILTER_BITS_PER_KEY = 10;
const KEY_FILTER_PROBES = 7;

/** One block: a 64-byte cache line of 16 words. */
const BLOCK_WORDS = 16;
const BLOCK_BITS = BLOCK_WORDS * 32;

/** The smallest power of two at or above `n`, for masking instead of dividing. */
function powerOfTwoAtLeast(n: number): number {
  let size = 1;
  while (size < n) size *= 2;
  return size;
}

/** Murmur3's 32-bit finalizer: spreads every input bit over the whole word. */
function mix(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * A blocked Bloom filter: all the probes of a key fall in one 64-byte block, so a lookup touches
 * one cache line instead of seven. The filter is megabytes, far beyond the caches, and measured
 * seven scattered probes per key cost more than reading the key's bits would suggest.
 */
export class KeyFilter {
  private readonly words: Uint32Array<ArrayBuffer>;
  /** Blocks of BLOCK_WORDS words, minus one: the block index mask. */
  private readonly blockMask: number;
  private added = 0;
  /** The last key hashed and its hashes: a lookup and then an add of the same key hash once. */
  private lastKey = '';
  private block = 0;
  private h2 = 0;
  private h3 = 0;

  /**
   * A filter sized for `capacityKeys` keys, within `keysMin` (tests go lower)..KEY_FILTER_KEYS_MAX,
   * or one holding the bits `words` of a filter of the same size built elsewhere, with `count` keys.
   */
  constructor(capacityKeys: number, keysMin = KEY_FILTER_KEYS_MIN, words?: Uint32Array<ArrayBuffer>, count = 0) {
    const keys = Math.min(KEY_FILTER_KEYS_MAX, Math.max(keysMin, 1, Math.ceil(capacityKeys)));
    const blocks = powerOfTwoAtLeast((keys * KEY_FILTER_BITS_PER_KEY) / BLOCK_BITS);
    if (words !== undefined && words.length !== blocks * BLOCK_WORDS)
      throw new Error(`key filter: ${words.length} words given, ${blocks * BLOCK_WORDS} expected`);
    this.words = words ?? new Uint32Array(blocks * BLOCK_WORDS);
    this.blockMask = blocks - 1;
    this.capacityKeys = Math.floor((blocks * BLOCK_BITS) / KEY_FILTER_BITS_PER_KEY);
    this.added = count;
  }

  /** The bits, to hand a filter built on one thread to another. */
  get bits(): Uint32Array<ArrayBuffer> {
    return this.words;
  }

  /** Adds every key of `other`, a filter of the same size: the union of two sets is the OR of their bits. */
  addAll(other: KeyFilter): void {
    if (other.words.length !== this.words.length) throw new Error('key filter: a union of filters of different sizes');
    for (let i = 0; i < this.words.length; i++) this.words[i] = (this.words[i] as number) | (other.words[i] as number);
    this.added += other.added;
  }

  /** Keys the filter holds at about 1% false "maybe" answers; more still work, less well. */
  readonly capacityKeys: number;

  /** Keys added so far, counting a repeated key each time. */
  get count(): number {
    return this.added;
  }

  add(key: string): void {
    // The usual caller asked mightContain about this very string just before: reuse its hashes.
    if (key !== this.lastKey || key.length === 0) this.hash(key);
    const base = this.block * BLOCK_WORDS;
    for (let i = 0; i < KEY_FILTER_PROBES; i++) {
      const bit = (this.h2 + i * this.h3) & (BLOCK_BITS - 1);
      const word = base + (bit >>> 5);
      this.words[word] = (this.words[word] as number) | (1 << (bit & 31));
    }
    this.added++;
  }

  /** False only if `key` was never added. */
  mightContain(key: string): boolean {
    this.hash(key);
    const base = this.block * BLOCK_WORDS;
    for (let i = 0; i < KEY_FILTER_PROBES; i++) {
      const bit = (this.h2 + i * this.h3) & (BLOCK_BITS - 1);
      if (((this.words[base + (bit >>> 5)] as number) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /** Three hashes of the key's UTF-16 code units (two FNV-1a runs, mixed): the block and two probe steps. */
  private hash(key: string): void {
    let a = 0x811c9dc5;
    let b = 0x9747b28c;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
    }
    this.lastKey = key;
    this.block = mix(a) & this.blockMask;
    this.h2 = mix(b);
    // An odd step visits distinct bits of the power-of-two block for every probe.
    this.h3 = mix(b ^ 0x9e3779b9) | 1;
  }
}
