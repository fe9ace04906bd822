/**
 * The protobuf wire format, by hand: tags, varints and length-delimited
 * fields, written into a sized buffer and read back by one strict reader.
 * The Pods API framing, the PodQuery messages and the binary field mask all
 * use it; the input it reads is hostile, so every length is checked before
 * it is used and every malformation throws a `TypeError`.
 *
 * @module
 */

/** Wire types of the protobuf encoding. */
export const WIRE_TYPE = {
  varint: 0,
  fixed64: 1,
  lengthDelimited: 2,
  startGroup: 3,
  endGroup: 4,
  fixed32: 5,
} as const;

/** Protobuf wire type of varints. */
export const WIRE_VARINT = WIRE_TYPE.varint;
/** Protobuf wire type of length-delimited fields. */
export const WIRE_LEN = WIRE_TYPE.lengthDelimited;

/** Largest field number protobuf allows. */
export const MAX_FIELD_NUMBER = 0x1fffffff;
/** Bounds recursion on hostile input (protobuf's default recursion limit). */
export const MAX_GROUP_DEPTH = 100;
/** A varint has at most 10 bytes. */
const MAX_VARINT_BYTES = 10;

/** UTF-8 decoding that rejects invalid input. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** Longest text read without the decoder when it is all ASCII (a UID is 36). */
const SHORT_ASCII_BYTES = 64;

/**
 * Decodes UTF-8 strictly. Short ASCII text (UIDs, names, field paths) is read
 * here: a call into the runtime's decoder cost twice as much as the loop.
 *
 * @param bytes The encoded text.
 * @returns The text.
 * @throws {TypeError} For invalid UTF-8.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  const length = bytes.byteLength;
  if (length <= SHORT_ASCII_BYTES) {
    // Copied into a plain array as it is checked: `apply` reads one faster than a typed array.
    const codes = new Array<number>(length);
    let i = 0;
    for (; i < length; i++) {
      const c = bytes[i]!;
      if (c >= 0x80) break;
      codes[i] = c;
    }
    if (i === length) return String.fromCharCode.apply(null, codes);
  }
  return STRICT_UTF8.decode(bytes);
}

/**
 * The bytes a varint of `n` takes.
 *
 * @param n A non-negative integer.
 * @returns 1 to 10.
 */
export function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/**
 * Writes a varint at `pos`.
 *
 * @param buf The buffer, large enough.
 * @param pos Where to write.
 * @param n A non-negative integer.
 * @returns The position after it.
 */
export function writeVarint(buf: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/**
 * The size of a length-delimited field: tag, length, payload.
 *
 * @param field The field number.
 * @param payload The payload.
 * @returns Its size in bytes.
 */
export function lenFieldSize(field: number, payload: Uint8Array): number {
  return varintSize(field << 3) + varintSize(payload.length) + payload.length;
}

/**
 * Writes a length-delimited field at `pos`.
 *
 * @param buf The buffer, large enough ({@linkcode lenFieldSize}).
 * @param pos Where to write.
 * @param field The field number.
 * @param payload The payload.
 * @returns The position after it.
 */
export function writeLenField(
  buf: Uint8Array,
  pos: number,
  field: number,
  payload: Uint8Array,
): number {
  pos = writeVarint(buf, pos, (field << 3) | WIRE_LEN);
  pos = writeVarint(buf, pos, payload.length);
  buf.set(payload, pos);
  return pos + payload.length;
}

/** One field read by {@linkcode WireReader.next}. */
export interface WireField {
  readonly field: number;
  readonly wireType: number;
  /** The varint value (wire type 0). */
  readonly varint: number;
  /** The payload (wire type 2). */
  readonly bytes: Uint8Array | undefined;
}

/**
 * A strict protobuf reader over one message; every malformation throws a
 * `TypeError` whose message names the message (`Cannot decode <what>: …`).
 *
 * @example Usage
 * ```ts
 * import { WireReader } from "./wire.ts";
 * const reader = new WireReader(new Uint8Array([8, 1]), "Example");
 * reader.next().varint; // 1
 * ```
 */
export class WireReader {
  readonly #buf: Uint8Array;
  readonly #what: string;
  #pos = 0;
  #depth = 0;

  /**
   * @param buf The serialized message.
   * @param what Its name, for error messages.
   */
  constructor(buf: Uint8Array, what: string) {
    this.#buf = buf;
    this.#what = what;
  }

  /** Where the next read starts. */
  get offset(): number {
    return this.#pos;
  }

  /** Every byte has been read. */
  get done(): boolean {
    return this.#pos >= this.#buf.length;
  }

  /**
   * Fails the read.
   *
   * @param reason What is wrong.
   * @throws {TypeError} Always.
   */
  fail(reason: string): never {
    throw new TypeError(`Cannot decode ${this.#what}: ${reason}`);
  }

  /**
   * Reads a varint. Values above 2^53 lose precision, which only matters for
   * values that are rejected anyway (lengths past the end, field numbers).
   *
   * @returns Its value.
   */
  varint(): number {
    const buf = this.#buf;
    const start = this.#pos;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.#pos >= buf.length) this.fail(`truncated varint at offset ${start}`);
      const b = buf[this.#pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (i === MAX_VARINT_BYTES - 1 && b > 1) this.fail("varint overflows 64 bits");
        return result;
      }
      scale *= 128;
    }
    return this.fail(`varint longer than 10 bytes at offset ${start}`);
  }

  /** @returns The payload of a length-delimited value (length, then bytes). */
  lengthDelimited(): Uint8Array {
    const start = this.#pos;
    const length = this.varint();
    if (length > this.#buf.length - this.#pos) {
      this.fail(`length ${length} at offset ${start} runs past the end of the input`);
    }
    const out = this.#buf.subarray(this.#pos, this.#pos + length);
    this.#pos += length;
    return out;
  }

  /** Skips a fixed-size value of `count` bytes. */
  skip(count: number): void {
    if (count > this.#buf.length - this.#pos) {
      this.fail(`truncated fixed-size field at offset ${this.#pos} runs past the end of the input`);
    }
    this.#pos += count;
  }

  /**
   * Reads the next field: varints and length-delimited values are returned,
   * fixed-size values and groups skipped.
   *
   * @returns The field.
   */
  next(): WireField {
    return this.#body(this.varint());
  }

  #body(tag: number): WireField {
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0) this.fail("field number 0");
    if (field > MAX_FIELD_NUMBER) this.fail(`field number "${field}" out of range`);
    switch (wireType) {
      case WIRE_TYPE.varint:
        return { field, wireType, varint: this.varint(), bytes: undefined };
      case WIRE_TYPE.lengthDelimited:
        return { field, wireType, varint: 0, bytes: this.lengthDelimited() };
      case WIRE_TYPE.fixed64:
        this.skip(8);
        break;
      case WIRE_TYPE.fixed32:
        this.skip(4);
        break;
      case WIRE_TYPE.startGroup:
        this.#skipGroup(field);
        break;
      default:
        this.fail(`invalid wire type "${wireType}" for field "${field}"`);
    }
    return { field, wireType, varint: 0, bytes: undefined };
  }

  #skipGroup(start: number): void {
    if (++this.#depth > MAX_GROUP_DEPTH) this.fail("groups nested too deeply");
    for (;;) {
      if (this.done) this.fail(`unterminated group "${start}"`);
      const tag = this.varint();
      const field = Math.floor(tag / 8);
      if (tag % 8 === WIRE_TYPE.endGroup) {
        if (field !== start) this.fail(`mismatched end of group "${start}"`);
        this.#depth--;
        return;
      }
      this.#body(tag);
    }
  }
}

/**
 * Fails the read unless a field has the wire type expected.
 *
 * @param reader The reader (names the message).
 * @param f The field read.
 * @param wireType The wire type its schema gives.
 * @param name The field's name.
 * @throws {TypeError} When the wire types differ.
 */
export function expect(reader: WireReader, f: WireField, wireType: number, name: string): void {
  if (f.wireType !== wireType) {
    reader.fail(`field "${name}" has wire type ${f.wireType}, expected ${wireType}`);
  }
}
