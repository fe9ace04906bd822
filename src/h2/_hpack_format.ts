/**
 * The wire format HPACK's decoder and encoder share (RFC 7541 sections 5
 * and 6): representation bits, the Huffman flag, the default table size.
 *
 * @module
 */

/**
 * SETTINGS_HEADER_TABLE_SIZE until a peer says otherwise (RFC 9113 6.5.2):
 * each side's dynamic table starts this large.
 */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

/** Representation type bits in the first octet (RFC 7541 section 6). */
export const REPRESENTATION = {
  /** `1xxxxxxx`: indexed field, 7-bit index. */
  indexed: 0x80,
  /** `01xxxxxx`: literal added to the table, 6-bit name index. */
  incremental: 0x40,
  /** `001xxxxx`: dynamic table size update, 5-bit size. */
  sizeUpdate: 0x20,
  /** `0001xxxx`: literal never indexed, 4-bit name index. */
  neverIndexed: 0x10,
  /** `0000xxxx`: literal without indexing, 4-bit name index. */
  withoutIndexing: 0x00,
} as const;

/** The `H` bit of a string literal's length: the octets are Huffman-coded. */
export const HUFFMAN_FLAG = 0x80;

/**
 * Checks a dynamic table size a caller asks for.
 *
 * @param size The size in octets.
 * @throws {RangeError} When it is not an integer from 0 to 2^32-1.
 */
export function checkTableSize(size: number): void {
  if (!Number.isInteger(size) || size < 0 || size > 0xffff_ffff) {
    throw new RangeError(
      `Cannot use HPACK table size "${size}": it must be an integer from 0 to 4294967295`,
    );
  }
}
