/**
 * The static Huffman code HPACK uses for string literals (RFC 7541 section
 * 5.2 and Appendix B). Decoding runs a state machine that eats four bits at a
 * time: one table lookup per nibble instead of one branch per bit. The table
 * (256 states × 16 nibbles) is built once, when the module loads.
 *
 * @module
 */

import { HpackError } from "./hpack_error.ts";

/**
 * Code length, in bits, of each symbol of RFC 7541 Appendix B: octets 0 to
 * 255, then EOS. The code is canonical (sorting the symbols by length, then by
 * value, and counting up gives the RFC's codes), so these lengths define it
 * completely. Most typos here would leave an incomplete prefix code, which
 * the module refuses to load; the tests check the codes against RFC rows.
 */
// deno-fmt-ignore
const CODE_LENGTHS = new Uint8Array([
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00-0x0f
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10-0x1f
   6, 10, 10, 12, 13,  6,  8, 11, 10, 10,  8, 11,  8,  6,  6,  6, // 0x20-0x2f
   5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8, 15,  6, 12, 10, // 0x30-0x3f
  13,  6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7, // 0x40-0x4f
   7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8, 13, 19, 13, 14,  6, // 0x50-0x5f
  15,  5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5, // 0x60-0x6f
   6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7, 15, 11, 14, 13, 28, // 0x70-0x7f
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80-0x8f
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90-0x9f
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0-0xaf
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0-0xbf
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0-0xcf
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0-0xdf
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0-0xef
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0-0xff
  30, // EOS
]);

/** The end-of-string symbol: it only ever appears as padding, never whole. */
const EOS = 256;
/**
 * Longest run of padding bits: padding completes the last octet, so a whole
 * octet of it (or more) means the encoder sent an extra byte (RFC 7541 5.2).
 */
const MAX_PADDING_BITS = 7;
/** The shortest code is 5 bits, so n encoded octets hold at most 8n / 5 symbols. */
const MIN_CODE_LENGTH = 5;

/** The code of each symbol, right-aligned (derived from {@linkcode CODE_LENGTHS}). */
const CODES = canonicalCodes(CODE_LENGTHS);

// A decode table entry packs the state reached (low 8 bits), the symbol
// completed on the way (next 8 bits) and two flags. One nibble completes at
// most one symbol, because no code is shorter than 5 bits.
const STATE_MASK = 0xff;
const EMITS = 0x1_0000;
const HITS_EOS = 0x2_0000;

/** How the input may end in a given state. */
const ENDING = {
  /** At the root, or after up to 7 one bits. */
  ok: 0,
  /** After 8 to 29 one bits: more padding than one octet's worth. */
  paddingTooLong: 1,
  /** Inside a code, or after padding with a zero in it. */
  paddingNotOnes: 2,
} as const;

const { transitions: TRANSITIONS, endings: ENDINGS } = buildDecoder(CODE_LENGTHS, CODES);

/**
 * Huffman-codes octets, padding the last octet with the high bits of EOS
 * (all ones), as RFC 7541 section 5.2 requires.
 *
 * @example
 * ```ts
 * import { huffmanEncode } from "./huffman.ts";
 *
 * // "www.example.com" from RFC 7541 C.4.1: 15 octets become 12.
 * const coded = huffmanEncode(new TextEncoder().encode("www.example.com"));
 * console.assert(coded.length === 12 && coded[0] === 0xf1);
 * ```
 *
 * @param bytes The octets to code.
 * @returns A new array of {@linkcode huffmanEncodedLength}`(bytes)` octets.
 */
export function huffmanEncode(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(huffmanEncodedLength(bytes));
  huffmanEncodeInto(bytes, out);
  return out;
}

/** Options of {@linkcode huffmanEncodeInto}. */
export interface HuffmanEncodeOptions {
  /** Where the coded string starts in `target`; 0 by default. */
  offset?: number;
}

/**
 * Huffman-codes octets into an existing buffer (what the HPACK encoder uses
 * to write straight into its block).
 *
 * @param bytes The octets to code.
 * @param target Where to write; needs {@linkcode huffmanEncodedLength}`(bytes)`
 * octets of room from `offset`.
 * @param options Where to start writing.
 * @returns The offset just past the coded string.
 * @throws {RangeError} When `target` is too short (its octets from `offset`
 * on may then hold part of the string).
 */
export function huffmanEncodeInto(
  bytes: Uint8Array,
  target: Uint8Array,
  options?: HuffmanEncodeOptions,
): number {
  const offset = options?.offset ?? 0;
  let pos = offset;
  // Bits not yet written, right-aligned in `pending`: fewer than 8 between
  // symbols. Codes longer than 24 bits go in two parts so that `pending`
  // never passes 31 bits and stays within int32 arithmetic.
  let pending = 0;
  let pendingBits = 0;
  for (let i = 0; i < bytes.length; i++) {
    const symbol = bytes[i]!;
    let code = CODES[symbol]!;
    let length = CODE_LENGTHS[symbol]!;
    if (pos + ((pendingBits + length) >>> 3) > target.length) throw tooShort(bytes, target, offset);
    if (length > 24) {
      const highBits = length - 24;
      pending = (pending << highBits) | (code >>> 24);
      pendingBits += highBits;
      if (pendingBits >= 8) {
        pendingBits -= 8;
        target[pos++] = pending >>> pendingBits;
        pending &= (1 << pendingBits) - 1;
      }
      code &= 0xff_ffff;
      length = 24;
    }
    pending = (pending << length) | code;
    pendingBits += length;
    while (pendingBits >= 8) {
      pendingBits -= 8;
      target[pos++] = pending >>> pendingBits;
    }
    pending &= (1 << pendingBits) - 1;
  }
  if (pendingBits > 0) {
    if (pos >= target.length) throw tooShort(bytes, target, offset);
    target[pos++] = (pending << (8 - pendingBits)) | (0xff >>> pendingBits);
  }
  return pos;
}

/**
 * Length of the Huffman coding of some octets, padding included: what a
 * caller compares with the raw length to pick the shorter form.
 *
 * @param bytes The octets to measure.
 * @returns The number of octets {@linkcode huffmanEncode} would produce.
 */
export function huffmanEncodedLength(bytes: Uint8Array): number {
  let bits = 0;
  for (let i = 0; i < bytes.length; i++) bits += CODE_LENGTHS[bytes[i]!]!;
  return Math.ceil(bits / 8);
}

/**
 * Decodes a Huffman-coded string.
 *
 * @example
 * ```ts
 * import { huffmanDecode } from "./huffman.ts";
 *
 * // "no-cache" from RFC 7541 C.4.2.
 * const text = huffmanDecode(new Uint8Array([0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]));
 * console.assert(new TextDecoder().decode(text) === "no-cache");
 * ```
 *
 * @param bytes The coded octets.
 * @returns A new array of the decoded octets.
 * @throws {HpackError} When the data holds the EOS symbol, or ends with more
 * than 7 bits of padding or with padding that is not all ones.
 */
export function huffmanDecode(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(huffmanMaxDecodedLength(bytes.length));
  return out.slice(0, huffmanDecodeInto(bytes, out));
}

/**
 * Most octets a Huffman string of some length can decode to: the room
 * {@linkcode huffmanDecodeInto} needs.
 *
 * @param encodedLength Length of the coded string, in octets.
 * @returns `floor(8 × encodedLength / 5)`, as no code is shorter than 5 bits.
 */
export function huffmanMaxDecodedLength(encodedLength: number): number {
  return Math.floor((encodedLength * 8) / MIN_CODE_LENGTH);
}

/** Options of {@linkcode huffmanDecodeInto}. */
export interface HuffmanDecodeOptions {
  /** Index of the first coded octet in `bytes`; 0 by default. */
  start?: number;
  /** Index just past the last coded octet in `bytes`; `bytes.length` by default. */
  end?: number;
}

/**
 * Decodes a Huffman-coded string into an existing buffer: what the HPACK
 * decoder uses, with one scratch buffer for every string and the string's
 * bounds in the block rather than a view of it per string.
 *
 * @param bytes Holds the coded octets.
 * @param target Where to write, from index 0; needs
 * {@linkcode huffmanMaxDecodedLength}`(end - start)` octets of room.
 * @param options Where the coded octets are in `bytes`; all of it by default.
 * @returns The number of octets written.
 * @throws {HpackError} When the data holds the EOS symbol, or ends with more
 * than 7 bits of padding or with padding that is not all ones.
 * @throws {RangeError} When the bounds are outside `bytes`, or `target` is
 * shorter than the worst case (checked up front, so that the loop needs no
 * bounds check).
 */
export function huffmanDecodeInto(
  bytes: Uint8Array,
  target: Uint8Array,
  options?: HuffmanDecodeOptions,
): number {
  const start = options?.start ?? 0;
  const end = options?.end ?? bytes.length;
  if (!(start >= 0 && start <= end && end <= bytes.length)) {
    throw new RangeError(
      `Cannot Huffman-decode octets "${start}" to "${end}" of ${bytes.length}: out of bounds`,
    );
  }
  const length = end - start;
  const needed = huffmanMaxDecodedLength(length);
  if (target.length < needed) {
    throw new RangeError(
      `Cannot Huffman-decode ${length} octets: target of "${target.length}" octets is shorter than "${needed}"`,
    );
  }
  let state = 0;
  let count = 0;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    let entry = TRANSITIONS[(state << 4) | (byte >>> 4)]!;
    if (entry > STATE_MASK) {
      if (entry >= HITS_EOS) throw eosError(i - start);
      target[count++] = entry >>> 8;
    }
    state = entry & STATE_MASK;
    entry = TRANSITIONS[(state << 4) | (byte & 0x0f)]!;
    if (entry > STATE_MASK) {
      if (entry >= HITS_EOS) throw eosError(i - start);
      target[count++] = entry >>> 8;
    }
    state = entry & STATE_MASK;
  }
  const ending = ENDINGS[state]!;
  if (ending === ENDING.paddingTooLong) {
    throw new HpackError(
      `Cannot decode Huffman string of ${length} octets: padding is longer than "${MAX_PADDING_BITS}" bits`,
    );
  }
  if (ending === ENDING.paddingNotOnes) {
    throw new HpackError(
      `Cannot decode Huffman string of ${length} octets: padding is not all ones`,
    );
  }
  return count;
}

function tooShort(bytes: Uint8Array, target: Uint8Array, offset: number): RangeError {
  return new RangeError(
    `Cannot Huffman-code ${bytes.length} octets: target of "${target.length}" octets from offset "${offset}" is too short`,
  );
}

function eosError(offset: number): HpackError {
  return new HpackError(
    `Cannot decode Huffman string: EOS symbol in the data at octet "${offset}"`,
  );
}

/**
 * Assigns canonical codes: symbols sorted by (length, value) get consecutive
 * codes, each shifted left when the length grows.
 */
function canonicalCodes(lengths: Uint8Array): Uint32Array {
  const order = Array.from(lengths.keys()).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const codes = new Uint32Array(lengths.length);
  let code = 0;
  let previousLength = lengths[order[0]!]!;
  for (const symbol of order) {
    const length = lengths[symbol]!;
    code <<= length - previousLength;
    previousLength = length;
    codes[symbol] = code;
    code++;
  }
  // A complete prefix code ends on the all-ones code of its longest length.
  if (code !== 2 ** previousLength) {
    throw new Error(
      `Huffman code lengths do not form a complete code: the last code is "${
        code - 1
      }" of ${previousLength} bits`,
    );
  }
  return codes;
}

/**
 * Builds the nibble state machine. States are the inner nodes of the code
 * tree (the root is state 0, 256 in all); a transition follows four bits from
 * a state, restarting at the root whenever it completes a symbol.
 */
function buildDecoder(
  lengths: Uint8Array,
  codes: Uint32Array,
): { transitions: Uint32Array; endings: Uint8Array } {
  const innerNodes = lengths.length - 1;
  // children[2 × node + bit]: an inner node's number, or ~symbol for a leaf
  // (always negative); 0 means not yet built (the root is nobody's child).
  const children = new Int16Array(2 * innerNodes);
  let nodes = 1;
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol]!;
    const code = codes[symbol]!;
    let node = 0;
    for (let bit = length - 1; bit > 0; bit--) {
      const slot = 2 * node + ((code >>> bit) & 1);
      if (children[slot] === 0) children[slot] = nodes++;
      node = children[slot]!;
    }
    children[2 * node + (code & 1)] = ~symbol;
  }

  // The input may end at the root, or after up to 7 one bits (the start of
  // EOS); anywhere else it ends inside a code, or with a zero in the padding.
  const endings = new Uint8Array(innerNodes).fill(ENDING.paddingNotOnes);
  // Following one bits from the root visits inner nodes until EOS's leaf.
  let onesNode = 0;
  for (let ones = 0; onesNode >= 0; ones++) {
    endings[onesNode] = ones <= MAX_PADDING_BITS ? ENDING.ok : ENDING.paddingTooLong;
    onesNode = children[2 * onesNode + 1]!;
  }

  const transitions = new Uint32Array(innerNodes * 16);
  for (let state = 0; state < innerNodes; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const child = children[2 * node + ((nibble >>> bit) & 1)]!;
        if (child >= 0) {
          node = child;
          continue;
        }
        const symbol = ~child;
        node = 0;
        if (symbol === EOS) {
          entry = HITS_EOS;
          break;
        }
        entry = EMITS | (symbol << 8);
      }
      transitions[(state << 4) | nibble] = entry | node;
    }
  }
  return { transitions, endings };
}
