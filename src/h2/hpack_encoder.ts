/**
 * The HPACK encoders (RFC 7541): a stateful one per connection, with its
 * dynamic table and the rules for what to index, and a stateless one whose
 * blocks may be cached and sent on any connection.
 *
 * @module
 */

import {
  DynamicTable,
  ENTRY_OVERHEAD,
  findStaticField,
  findStaticName,
  STATIC_TABLE,
} from "./hpack_tables.ts";
import type { HeaderField, ReadonlyDynamicTable } from "./hpack_tables.ts";
import { huffmanEncodedLength, huffmanEncodeInto } from "./huffman.ts";
import {
  checkTableSize,
  DEFAULT_HEADER_TABLE_SIZE,
  HUFFMAN_FLAG,
  REPRESENTATION,
} from "./_hpack_format.ts";

/**
 * Largest dynamic table our encoder uses, whatever the peer allows: the
 * encoder may always use less (RFC 7541 4.2), and a peer announcing a huge
 * table must not make us keep megabytes of headers per connection. Go's and
 * nghttp2's encoders stop at the same size.
 */
export const ENCODER_TABLE_SIZE_LIMIT = 4096;

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
