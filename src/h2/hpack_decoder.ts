/**
 * The HPACK decoder (RFC 7541): one per connection, reading the peer's
 * header blocks into fields, with its dynamic table and the limits that
 * keep a hostile block from costing more than its own size.
 *
 * @module
 */

import { HpackError } from "./hpack_error.ts";
import { DynamicTable, ENTRY_OVERHEAD, entrySize, STATIC_TABLE } from "./hpack_tables.ts";
import type { HeaderField, ReadonlyDynamicTable } from "./hpack_tables.ts";
import { huffmanDecodeInto, huffmanMaxDecodedLength } from "./huffman.ts";
import { RECENT_LITERAL_OCTETS, RecentLiterals } from "./_recent_literals.ts";
import {
  checkTableSize,
  DEFAULT_HEADER_TABLE_SIZE,
  HUFFMAN_FLAG,
  REPRESENTATION,
} from "./_hpack_format.ts";

/**
 * Largest integer a block may carry. Every HPACK integer is a length, an
 * index or a table size, all far below this; the cap keeps arithmetic exact
 * and rejects endless continuation octets early.
 */
const MAX_INTEGER = 2 ** 31 - 1;
/** Continuation octets after the prefix: 5 × 7 bits already exceed 2^31. */
const MAX_CONTINUATION_OCTETS = 5;

/**
 * Decoded strings up to this length are built a character at a time, which
 * is as fast as `String.fromCharCode.apply` for short strings and needs no cast.
 */
const SHORT_STRING = 64;
/** Longest argument list passed to `String.fromCharCode` at once. */
const CHAR_CODE_CHUNK = 8192;

/**
 * Huffman strings up to this many octets decode into one shared buffer;
 * longer ones get their own, so one huge header does not pin memory.
 */
const SHARED_SCRATCH_OCTETS = 4096;
const sharedScratch = new Uint8Array(huffmanMaxDecodedLength(SHARED_SCRATCH_OCTETS));

/** What a decoder holds between blocks, so as not to pin the caller's buffer. */
const NO_BLOCK = new Uint8Array(0);

/** Options of {@linkcode HpackDecoder}. */
export interface HpackDecoderOptions {
  /**
   * Our SETTINGS_HEADER_TABLE_SIZE: the largest table the peer may ask for
   * with a size update. Defaults to 4096.
   */
  maxTableSize?: number;
}

/** What {@linkcode HpackDecoder.decode} returns. */
export interface HpackDecodeResult {
  /**
   * The fields in block order; when `oversized`, only those that fit within
   * the limit. Indexed fields are the table's own tuples, shared, hence
   * read-only.
   */
  headers: HeaderField[];
  /** The header list went past `maxHeaderListSize` (answer 431 or refuse the stream). */
  oversized: boolean;
  /**
   * Size of the whole header list as RFC 9113 6.5.2 counts it (name + value
   * + 32 per field), fields past the limit included.
   */
  listSize: number;
}

/**
 * Decodes the header blocks of one connection's peer, keeping its dynamic
 * table in step with the peer's encoder. Blocks must be decoded whole and in
 * the order they arrived, including those of streams the caller will refuse.
 *
 * After an {@linkcode HpackError}, the table is out of step for good: the
 * connection must end with COMPRESSION_ERROR, and further calls throw again.
 *
 * @example
 * ```ts
 * import { HpackDecoder } from "./hpack.ts";
 *
 * const decoder = new HpackDecoder();
 * // RFC 7541 C.2.4: static index 2.
 * const { headers } = decoder.decode(new Uint8Array([0x82]));
 * console.assert(headers[0]![0] === ":method" && headers[0]![1] === "GET");
 * ```
 */
export class HpackDecoder {
  readonly #maxTableSize: number;
  readonly #table: DynamicTable;
  #block: Uint8Array = NO_BLOCK;
  #pos = 0;
  /** Where the octets of the string literal just read start. */
  #stringStart = 0;
  #failure: HpackError | undefined;
  /** Values the peer sends without indexing, made on the first such value. */
  #recent: RecentLiterals | undefined;

  /**
   * @param options Our SETTINGS_HEADER_TABLE_SIZE. The table starts at the
   * smaller of it and 4096, the size the peer's encoder assumes until it
   * sends a size update.
   * @throws {RangeError} When `maxTableSize` is not an integer from 0 to 2^32 - 1.
   */
  constructor(options: HpackDecoderOptions = {}) {
    const maxTableSize = options.maxTableSize ?? DEFAULT_HEADER_TABLE_SIZE;
    checkTableSize(maxTableSize);
    this.#maxTableSize = maxTableSize;
    this.#table = new DynamicTable(Math.min(maxTableSize, DEFAULT_HEADER_TABLE_SIZE));
  }

  /** The dynamic table, read-only (for tests and diagnostics). */
  get dynamicTable(): ReadonlyDynamicTable {
    return this.#table;
  }

  /**
   * Decodes one complete header block (the HEADERS or PUSH_PROMISE fragment
   * and its CONTINUATIONs, joined). Past `maxHeaderListSize` it keeps
   * decoding, so that the dynamic table stays in step with the peer, but
   * stops keeping fields and reports `oversized`.
   *
   * @param block The header block.
   * @param maxHeaderListSize Our SETTINGS_MAX_HEADER_LIST_SIZE, in octets;
   * unlimited by default. Pass it: one octet can index a 4 KB entry, so a
   * small block can stand for a huge header list.
   * @returns The fields, whether the list went past the limit, and its size.
   * @throws {HpackError} When the block is malformed: index 0 or past the
   * tables, an integer above 2^31 - 1, a string or integer cut short by the
   * end of the block, a table size update above our setting or after a field,
   * or a bad Huffman string. Also when an earlier block failed.
   * @throws {RangeError} When `maxHeaderListSize` is negative or NaN.
   */
  decode(block: Uint8Array, maxHeaderListSize: number = Infinity): HpackDecodeResult {
    if (!(maxHeaderListSize >= 0)) {
      throw new RangeError(
        `Cannot decode header block: maxHeaderListSize "${maxHeaderListSize}" is not a non-negative number`,
      );
    }
    if (this.#failure !== undefined) {
      throw new HpackError(
        `Cannot decode header block: an earlier block failed (${this.#failure.message})`,
        { cause: this.#failure },
      );
    }
    this.#block = block;
    this.#pos = 0;
    try {
      return this.#decodeBlock(maxHeaderListSize);
    } catch (err) {
      if (err instanceof HpackError) this.#failure = err;
      throw err;
    } finally {
      this.#block = NO_BLOCK;
    }
  }

  #decodeBlock(maxHeaderListSize: number): HpackDecodeResult {
    const block = this.#block;
    const headers: HeaderField[] = [];
    let listSize = 0;
    let oversized = false;
    let fieldSeen = false;
    while (this.#pos < block.length) {
      const first = block[this.#pos]!;
      if (first & REPRESENTATION.indexed) {
        const field = this.#lookup(this.#integer(7));
        fieldSeen = true;
        listSize += entrySize(field);
        if (!oversized && listSize > maxHeaderListSize) oversized = true;
        if (!oversized) headers.push(field);
      } else if (first & REPRESENTATION.incremental) {
        const nameIndex = this.#integer(6);
        const name = nameIndex === 0 ? this.#string() : this.#lookup(nameIndex)[0];
        const field: HeaderField = [name, this.#string()];
        this.#table.add(field);
        fieldSeen = true;
        listSize += entrySize(field);
        if (!oversized && listSize > maxHeaderListSize) oversized = true;
        if (!oversized) headers.push(field);
      } else if (first & REPRESENTATION.sizeUpdate) {
        const at = this.#pos;
        const size = this.#integer(5);
        if (fieldSeen) {
          throw new HpackError(
            `Cannot decode header block: dynamic table size update at octet "${at}" follows a header field`,
          );
        }
        if (size > this.#maxTableSize) {
          throw new HpackError(
            `Cannot decode header block: dynamic table size update to "${size}" exceeds our setting "${this.#maxTableSize}"`,
          );
        }
        this.#table.resize(size);
      } else {
        // Never indexed or without indexing: the table is left alone, so
        // past the limit the strings need only be measured.
        const nameIndex = this.#integer(4);
        fieldSeen = true;
        if (oversized) {
          const nameLength = nameIndex === 0
            ? this.#skipString()
            : this.#lookup(nameIndex)[0].length;
          listSize += nameLength + this.#skipString() + ENTRY_OVERHEAD;
          continue;
        }
        const name = nameIndex === 0 ? this.#string() : this.#lookup(nameIndex)[0];
        const value = (first & REPRESENTATION.neverIndexed) === 0
          ? this.#recentString()
          : this.#string();
        const field: HeaderField = [name, value];
        listSize += entrySize(field);
        if (listSize > maxHeaderListSize) oversized = true;
        else headers.push(field);
      }
    }
    return { headers, oversized, listSize };
  }

  /** Resolves an HPACK index against the static, then the dynamic table. */
  #lookup(index: number): HeaderField {
    if (index === 0) {
      throw new HpackError(`Cannot decode header block: index "0" is not allowed`);
    }
    const field = index <= STATIC_TABLE.length
      ? STATIC_TABLE[index - 1]
      : this.#table.get(index - STATIC_TABLE.length - 1);
    if (field === undefined) {
      throw new HpackError(
        `Cannot decode header block: index "${index}" is past the tables (${
          STATIC_TABLE.length + this.#table.length
        } entries)`,
      );
    }
    return field;
  }

  /** Reads an integer whose prefix fills the low `prefixBits` of the current octet. */
  #integer(prefixBits: number): number {
    const block = this.#block;
    const start = this.#pos;
    const limit = (1 << prefixBits) - 1;
    let value = block[this.#pos++]! & limit;
    if (value < limit) return value;
    let factor = 1;
    for (let i = 0; i < MAX_CONTINUATION_OCTETS; i++) {
      if (this.#pos >= block.length) {
        throw new HpackError(
          `Cannot decode header block: integer at octet "${start}" is cut short by the end of the block`,
        );
      }
      const octet = block[this.#pos++]!;
      value += (octet & 0x7f) * factor;
      if (value > MAX_INTEGER) break;
      if ((octet & 0x80) === 0) return value;
      factor *= 128;
    }
    throw new HpackError(
      `Cannot decode header block: integer at octet "${start}" exceeds "${MAX_INTEGER}"`,
    );
  }

  /**
   * Reads a string literal's length prefix and skips its octets, leaving
   * their bounds in `#stringStart` / `#pos` (fields, not a returned object,
   * as this runs for every literal).
   *
   * @returns Whether the octets are Huffman-coded.
   */
  #stringBounds(): boolean {
    const block = this.#block;
    const at = this.#pos;
    if (at >= block.length) {
      throw new HpackError(
        `Cannot decode header block: string literal expected at octet "${at}", found the end of the block`,
      );
    }
    const huffman = (block[at]! & HUFFMAN_FLAG) !== 0;
    const length = this.#integer(7);
    const start = this.#pos;
    if (length > block.length - start) {
      throw new HpackError(
        `Cannot decode header block: string of "${length}" octets at octet "${at}" runs past the end of the block (${
          block.length - start
        } left)`,
      );
    }
    this.#stringStart = start;
    this.#pos = start + length;
    return huffman;
  }

  #string(): string {
    const huffman = this.#stringBounds();
    return this.#decodeString(this.#stringStart, this.#pos, huffman);
  }

  /** The text of the literal's octets between `start` and `end` of the block. */
  #decodeString(start: number, end: number, huffman: boolean): string {
    if (!huffman) return latin1String(this.#block, start, end);
    const scratch = scratchFor(end - start);
    const length = huffmanDecodeInto(this.#block, scratch, { start, end });
    return latin1String(scratch, 0, length);
  }

  /**
   * {@linkcode #string} for a value sent without indexing: the same octets
   * as one of the last few are that value, not decoded again.
   */
  #recentString(): string {
    const huffman = this.#stringBounds();
    const start = this.#stringStart;
    const end = this.#pos;
    if (end - start > RECENT_LITERAL_OCTETS) return this.#decodeString(start, end, huffman);
    const recent = this.#recent ??= new RecentLiterals();
    const known = recent.find(this.#block, start, end, huffman);
    if (known !== undefined) return known;
    const value = this.#decodeString(start, end, huffman);
    recent.remember(this.#block, start, end, huffman, value);
    return value;
  }

  /** Reads a string literal without building it; returns its decoded length. */
  #skipString(): number {
    const huffman = this.#stringBounds();
    const start = this.#stringStart;
    const end = this.#pos;
    if (!huffman) return end - start;
    // Decoding is the only way to validate the code and learn the length.
    return huffmanDecodeInto(this.#block, scratchFor(end - start), { start, end });
  }
}

/** A buffer for Huffman decoding that holds the worst case of `encodedLength` octets. */
function scratchFor(encodedLength: number): Uint8Array {
  return encodedLength <= SHARED_SCRATCH_OCTETS
    ? sharedScratch
    : new Uint8Array(huffmanMaxDecodedLength(encodedLength));
}

/** One character per octet: what latin1 means for HTTP/2 field bytes. */
function latin1String(bytes: Uint8Array, start: number, end: number): string {
  if (end - start <= SHORT_STRING) {
    let text = "";
    for (let i = start; i < end; i++) text += String.fromCharCode(bytes[i]!);
    return text;
  }
  let text = "";
  for (let from = start; from < end; from += CHAR_CODE_CHUNK) {
    const chunk = bytes.subarray(from, Math.min(from + CHAR_CODE_CHUNK, end));
    // apply() takes any array-like at run time; its lib type insists on number[].
    text += String.fromCharCode.apply(null, chunk as unknown as number[]);
  }
  return text;
}
