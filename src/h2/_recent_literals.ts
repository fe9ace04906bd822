/**
 * The last few field values a peer sent as literals without indexing, by
 * their encoded octets. A client that keeps a value out of the dynamic
 * table sends the same octets with every request (nghttp2 and h2load send
 * `:path` this way, Huffman-coded, and `content-length`); decoding them
 * again cost more than the rest of the header block. A value whose octets
 * match a remembered one is that value: the same octets decode to the same
 * text. Values sent "never indexed" (secrets) are not remembered.
 *
 * One per decoder (per connection): a handful of short values, copied into
 * one fixed buffer, so a hit allocates nothing and the memory is bounded.
 *
 * @module
 */

/** Values remembered. */
const SLOTS = 4;
/** Longest encoded value remembered. */
export const RECENT_LITERAL_OCTETS = 64;

/** The recent values of one decoder. */
export class RecentLiterals {
  readonly #octets = new Uint8Array(SLOTS * RECENT_LITERAL_OCTETS);
  /** Each slot's encoded length, with 0x100 added when it was Huffman-coded; -1 when empty. */
  readonly #keys = new Int32Array(SLOTS).fill(-1);
  readonly #values: string[] = new Array<string>(SLOTS).fill("");
  /** The slot the next miss overwrites (round robin). */
  #next = 0;

  /**
   * @param block The header block.
   * @param start The value's first octet in `block`.
   * @param end Past its last octet.
   * @param huffman Whether the octets are Huffman-coded.
   * @returns The remembered value these octets decode to, or `undefined`.
   */
  find(block: Uint8Array, start: number, end: number, huffman: boolean): string | undefined {
    const length = end - start;
    const key = huffman ? length | 0x100 : length;
    for (let slot = 0; slot < SLOTS; slot++) {
      if (this.#keys[slot] !== key) continue;
      const at = slot * RECENT_LITERAL_OCTETS;
      let same = true;
      for (let i = 0; i < length; i++) {
        if (this.#octets[at + i] !== block[start + i]) {
          same = false;
          break;
        }
      }
      if (same) return this.#values[slot];
    }
    return undefined;
  }

  /**
   * Remembers what the octets decoded to, in place of the oldest value.
   *
   * @param block The header block.
   * @param start The value's first octet.
   * @param end Past its last octet; at most {@linkcode RECENT_LITERAL_OCTETS} after `start`.
   * @param huffman Whether the octets are Huffman-coded.
   * @param value The decoded value.
   */
  remember(block: Uint8Array, start: number, end: number, huffman: boolean, value: string): void {
    const length = end - start;
    const slot = this.#next;
    this.#next = (slot + 1) % SLOTS;
    const at = slot * RECENT_LITERAL_OCTETS;
    for (let i = 0; i < length; i++) this.#octets[at + i] = block[start + i]!;
    this.#keys[slot] = huffman ? length | 0x100 : length;
    this.#values[slot] = value;
  }
}
