/**
 * HPACK, the header compression of HTTP/2 (RFC 7541): a stateful decoder and
 * encoder, one of each per connection, plus a stateless encoder whose blocks
 * may be cached and sent on any connection.
 *
 * Header names and values are byte strings. They travel here as JavaScript
 * strings holding one octet per UTF-16 code unit (latin1, not the
 * windows-1252 of `TextDecoder("latin1")`), so any octet round-trips and
 * `length` counts octets.
 *
 * @module
 */

import { HpackError } from "./hpack_error.ts";
import {
  DynamicTable,
  ENTRY_OVERHEAD,
  entrySize,
  findStaticField,
  findStaticName,
  STATIC_TABLE,
} from "./hpack_tables.ts";
import type { HeaderField, ReadonlyDynamicTable } from "./hpack_tables.ts";
import {
  huffmanDecodeInto,
  huffmanEncodedLength,
  huffmanEncodeInto,
  huffmanMaxDecodedLength,
} from "./huffman.ts";

export { HpackError } from "./hpack_error.ts";
export type { HeaderField, ReadonlyDynamicTable } from "./hpack_tables.ts";

/**
 * SETTINGS_HEADER_TABLE_SIZE until a peer says otherwise (RFC 9113 6.5.2):
 * each side's dynamic table starts this large.
 */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

/**
 * Largest dynamic table our encoder uses, whatever the peer allows: the
 * encoder may always use less (RFC 7541 4.2), and a peer announcing a huge
 * table must not make us keep megabytes of headers per connection. Go's and
 * nghttp2's encoders stop at the same size.
 */
export const ENCODER_TABLE_SIZE_LIMIT = 4096;

/**
 * Largest integer a block may carry. Every HPACK integer is a length, an
 * index or a table size, all far below this; the cap keeps arithmetic exact
 * and rejects endless continuation octets early.
 */
const MAX_INTEGER = 2 ** 31 - 1;
/** Continuation octets after the prefix: 5 × 7 bits already exceed 2^31. */
const MAX_CONTINUATION_OCTETS = 5;

/** Representation type bits in the first octet (RFC 7541 section 6). */
const REPRESENTATION = {
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
const HUFFMAN_FLAG = 0x80;

/**
 * Names whose values are secrets. Never-indexed literals keep them out of
 * every table on the way, ours and any intermediary's, which a compression
 * oracle could otherwise probe (RFC 7541 section 7.1.3).
 */
const NEVER_INDEXED_NAMES: ReadonlySet<string> = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
]);

/**
 * Names whose values change from one message to the next: an entry for them
 * would never be used again, and would evict entries that would.
 */
const UNINDEXED_NAMES: ReadonlySet<string> = new Set([
  "age",
  "content-length",
  "content-range",
  "date",
  "etag",
  "grpc-message",
  "grpc-timeout",
  "grpc-trace-bin",
  "if-modified-since",
  "if-none-match",
  "if-range",
  "if-unmodified-since",
  "last-modified",
  "location",
  "traceparent",
  "x-request-id",
]);

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
        const field: HeaderField = [name, this.#string()];
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
    const start = this.#stringStart;
    const end = this.#pos;
    if (!huffman) return latin1String(this.#block, start, end);
    const scratch = scratchFor(end - start);
    const length = huffmanDecodeInto(this.#block, scratch, { start, end });
    return latin1String(scratch, 0, length);
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

/** Options of {@linkcode HpackEncoder}. */
export interface HpackEncoderOptions {
  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE, if known before the first block.
   * Defaults to 4096.
   */
  maxTableSize?: number;
}

/**
 * Encodes the header blocks sent to one connection's peer, keeping a dynamic
 * table in step with the peer's decoder: each block must be sent, in the
 * order encoded (RFC 9113 4.3).
 *
 * Exact matches in either table become a single index. Other fields become
 * literals: never indexed for secrets (authorization, cookie…), without
 * indexing for values that change per message (content-length, date,
 * grpc-timeout…) or that would fill most of the table, and added to the
 * table otherwise. Each string is Huffman-coded when that is shorter.
 *
 * @example
 * ```ts
 * import { HpackDecoder, HpackEncoder } from "./hpack.ts";
 *
 * const encoder = new HpackEncoder();
 * const decoder = new HpackDecoder();
 * const fields = [[":status", "200"], ["content-type", "application/grpc"]] as const;
 * const first = encoder.encode(fields);
 * const second = encoder.encode(fields); // two indices now
 * console.assert(second.length === 2 && second.length < first.length);
 * decoder.decode(first);
 * console.assert(decoder.decode(second).headers[1]![1] === "application/grpc");
 * ```
 */
export class HpackEncoder {
  readonly #table: DynamicTable;
  readonly #writer = new BlockWriter();
  /** Smallest size set since the last block, if any was set. */
  #pendingMin: number | undefined;
  /** Latest size set since the last block. */
  #pendingFinal = 0;

  /**
   * @param options The peer's SETTINGS_HEADER_TABLE_SIZE.
   * @throws {RangeError} When `maxTableSize` is not an integer from 0 to 2^32 - 1.
   */
  constructor(options: HpackEncoderOptions = {}) {
    const maxTableSize = options.maxTableSize ?? DEFAULT_HEADER_TABLE_SIZE;
    checkTableSize(maxTableSize);
    this.#table = new DynamicTable(DEFAULT_HEADER_TABLE_SIZE, { searchable: true });
    // The peer's decoder starts at 4096: a smaller table must be announced.
    if (Math.min(maxTableSize, ENCODER_TABLE_SIZE_LIMIT) !== DEFAULT_HEADER_TABLE_SIZE) {
      this.setMaxTableSize(maxTableSize);
    }
  }

  /** The dynamic table, read-only (for tests and diagnostics). */
  get dynamicTable(): ReadonlyDynamicTable {
    return this.#table;
  }

  /**
   * Takes a new SETTINGS_HEADER_TABLE_SIZE from the peer, when its SETTINGS
   * frame arrives.
   * The next block starts with a dynamic table size update to the new size,
   * capped at {@linkcode ENCODER_TABLE_SIZE_LIMIT}; after several changes, to
   * the smallest size seen first when it was below the final one, so that the
   * peer evicts what it had to (RFC 7541 4.2 and 6.3).
   *
   * @param size The peer's new setting, in octets.
   * @throws {RangeError} When `size` is not an integer from 0 to 2^32 - 1.
   */
  setMaxTableSize(size: number): void {
    checkTableSize(size);
    const effective = Math.min(size, ENCODER_TABLE_SIZE_LIMIT);
    this.#pendingMin = Math.min(this.#pendingMin ?? effective, effective);
    this.#pendingFinal = effective;
  }

  /**
   * Encodes one header block, updating the dynamic table.
   *
   * @param headers The fields, in order; names lowercase, as HTTP/2 requires.
   * @returns A new block, to be sent before any block encoded later.
   * @throws {TypeError} When a name or value is not a string or holds a code
   * unit above 0xff (checked before any state changes).
   */
  encode(headers: readonly HeaderField[]): Uint8Array {
    checkFields(headers);
    const writer = this.#writer;
    writer.reset();
    if (this.#pendingMin !== undefined) {
      if (this.#pendingMin < this.#pendingFinal) {
        writer.integer(this.#pendingMin, 5, REPRESENTATION.sizeUpdate);
        this.#table.resize(this.#pendingMin);
      }
      writer.integer(this.#pendingFinal, 5, REPRESENTATION.sizeUpdate);
      this.#table.resize(this.#pendingFinal);
      this.#pendingMin = undefined;
    }
    for (const [name, value] of headers) this.#encodeField(writer, name, value);
    return writer.take();
  }

  #encodeField(writer: BlockWriter, name: string, value: string): void {
    const table = this.#table;
    const staticIndex = findStaticField(name, value);
    if (staticIndex !== 0) {
      writer.integer(staticIndex, 7, REPRESENTATION.indexed);
      return;
    }
    const secret = NEVER_INDEXED_NAMES.has(name.toLowerCase());
    if (!secret) {
      const dynamicIndex = table.findField(name, value);
      if (dynamicIndex >= 0) {
        writer.integer(dynamicIndex + STATIC_TABLE.length + 1, 7, REPRESENTATION.indexed);
        return;
      }
    }
    let nameIndex = findStaticName(name);
    if (nameIndex === 0) {
      const dynamicIndex = table.findName(name);
      if (dynamicIndex >= 0) nameIndex = dynamicIndex + STATIC_TABLE.length + 1;
    }
    if (secret) {
      writer.literal(nameIndex, 4, REPRESENTATION.neverIndexed, name, value);
      return;
    }
    const size = name.length + value.length + ENTRY_OVERHEAD;
    // A field filling most of the table would evict everything for one use.
    if (UNINDEXED_NAMES.has(name) || size > (table.maxSize * 3) / 4) {
      writer.literal(nameIndex, 4, REPRESENTATION.withoutIndexing, name, value);
      return;
    }
    writer.literal(nameIndex, 6, REPRESENTATION.incremental, name, value);
    table.add([name, value]);
  }
}

/**
 * Encodes a header block with no dynamic table: static indices where a field
 * or name is in the static table, literals without indexing (never indexed
 * for secrets) otherwise, each string Huffman-coded when that is shorter.
 * The output depends only on the input, so callers may cache a block and send
 * it on any connection, whatever that connection's HPACK state.
 *
 * @example
 * ```ts
 * import { encodeHeaderBlockWithoutIndexing } from "./hpack.ts";
 *
 * const block = encodeHeaderBlockWithoutIndexing([[":status", "200"]]);
 * console.assert(block.length === 1 && block[0] === 0x88);
 * ```
 *
 * @param headers The fields, in order; names lowercase, as HTTP/2 requires.
 * @returns A new block.
 * @throws {TypeError} When a name or value is not a string or holds a code
 * unit above 0xff.
 */
export function encodeHeaderBlockWithoutIndexing(headers: readonly HeaderField[]): Uint8Array {
  checkFields(headers);
  const writer = statelessWriter;
  writer.reset();
  for (const [name, value] of headers) {
    const staticIndex = findStaticField(name, value);
    if (staticIndex !== 0) {
      writer.integer(staticIndex, 7, REPRESENTATION.indexed);
      continue;
    }
    const type = NEVER_INDEXED_NAMES.has(name.toLowerCase())
      ? REPRESENTATION.neverIndexed
      : REPRESENTATION.withoutIndexing;
    writer.literal(findStaticName(name), 4, type, name, value);
  }
  return writer.take();
}

/** Code units an HPACK string cannot hold: anything above one octet. */
const NOT_AN_OCTET = /[\u0100-\uffff]/;

function checkFields(headers: readonly HeaderField[]): void {
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i]!;
    checkOctets(name, i, "name");
    checkOctets(value, i, "value");
  }
}

function checkOctets(text: string, field: number, part: "name" | "value"): void {
  if (typeof text !== "string") {
    throw new TypeError(`Cannot encode header field "${field}": ${part} is not a string`);
  }
  if (!NOT_AN_OCTET.test(text)) return;
  const at = text.search(NOT_AN_OCTET);
  const unit = text.charCodeAt(at).toString(16).toUpperCase().padStart(4, "0");
  throw new TypeError(
    `Cannot encode header field "${field}": ${part} holds code unit "U+${unit}" at "${at}", above 0xff`,
  );
}

function checkTableSize(size: number): void {
  if (!Number.isInteger(size) || size < 0 || size > 0xffff_ffff) {
    throw new RangeError(
      `Cannot use HPACK table size "${size}": it must be an integer from 0 to 4294967295`,
    );
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

/** Largest output buffer an encoder keeps between blocks. */
const RETAINED_BUFFER_OCTETS = 64 * 1024;

/** The growable output of one block, reused across blocks by an encoder. */
class BlockWriter {
  #buffer = new Uint8Array(256);
  #length = 0;
  /** Latin1 octets of the string being written, before choosing its coding. */
  #octets = new Uint8Array(256);

  reset(): void {
    this.#length = 0;
    // One huge block must not pin its buffer for the connection's lifetime.
    if (this.#buffer.length > RETAINED_BUFFER_OCTETS) this.#buffer = new Uint8Array(256);
    if (this.#octets.length > RETAINED_BUFFER_OCTETS) this.#octets = new Uint8Array(256);
  }

  /** @returns A copy of the block written so far. */
  take(): Uint8Array {
    return this.#buffer.slice(0, this.#length);
  }

  /** Writes an integer with a `prefixBits` prefix after the `flags` bits (RFC 7541 5.1). */
  integer(value: number, prefixBits: number, flags: number): void {
    this.#reserve(6);
    const buffer = this.#buffer;
    const limit = (1 << prefixBits) - 1;
    if (value < limit) {
      buffer[this.#length++] = flags | value;
      return;
    }
    buffer[this.#length++] = flags | limit;
    let rest = value - limit;
    while (rest >= 128) {
      buffer[this.#length++] = (rest % 128) | 0x80;
      rest = Math.floor(rest / 128);
    }
    buffer[this.#length++] = rest;
  }

  /** Writes a literal field: the name as an index (when not 0) or a string, then the value. */
  literal(nameIndex: number, prefixBits: number, flags: number, name: string, value: string): void {
    this.integer(nameIndex, prefixBits, flags);
    if (nameIndex === 0) this.string(name);
    this.string(value);
  }

  /** Writes a string literal, Huffman-coded when that is shorter (RFC 7541 5.2). */
  string(text: string): void {
    const length = text.length;
    if (this.#octets.length < length) this.#octets = new Uint8Array(length * 2);
    const octets = this.#octets.subarray(0, length);
    for (let i = 0; i < length; i++) octets[i] = text.charCodeAt(i);
    const huffmanLength = huffmanEncodedLength(octets);
    if (huffmanLength < length) {
      this.integer(huffmanLength, 7, HUFFMAN_FLAG);
      this.#reserve(huffmanLength);
      this.#length = huffmanEncodeInto(octets, this.#buffer, { offset: this.#length });
      return;
    }
    this.integer(length, 7, 0);
    this.#reserve(length);
    this.#buffer.set(octets, this.#length);
    this.#length += length;
  }

  #reserve(octets: number): void {
    const needed = this.#length + octets;
    if (needed <= this.#buffer.length) return;
    const buffer = new Uint8Array(Math.max(needed, this.#buffer.length * 2));
    buffer.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = buffer;
  }
}

/** The writer of {@linkcode encodeHeaderBlockWithoutIndexing}: each call ends with a copy. */
const statelessWriter = new BlockWriter();
