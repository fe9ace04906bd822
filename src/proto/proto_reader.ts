/**
 * A cursor over protobuf bytes for the schema-driven decoders (the pod codec
 * and the plain-object codec): one object per decode, no allocation per
 * field. Values read as the reference JS library the tests compare against
 * (version 8) reads them: varints as their low 32 bits for 32-bit types, int64 as
 * the nearest `number`, a bool true when any bit is set, strings through a
 * non-fatal `TextDecoder` (invalid bytes become U+FFFD, a BOM is kept, the
 * string is flat), short ASCII ones through a small intern table.
 *
 * Errors say what is wrong and where. A reader made without a message name
 * throws as the reference does: a `RangeError` for reading past the end, an
 * `Error` for a malformation. A reader given the name of the message it reads
 * (hostile input: requests, the kubelet's answers) throws a `TypeError`
 * `Cannot decode <message>: <reason>` for both, and its owner keeps
 * {@linkcode ProtoReader.what} on the message being read.
 *
 * `len` is the end of the message being read: a decoder narrows it to a
 * sub-message's end while it reads that sub-message, so no read can run
 * past it.
 *
 * @module
 */

import { MAX_DEPTH } from "./wire.ts";

const LOOSE_UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Short ASCII strings read recently, by a hash of their bytes: a direct-mapped
 * table, so its size is fixed. A CRI relist of 1000 pods reads 64 000 strings
 * of which about 5 000 differ (label and annotation keys, namespaces, images,
 * container names repeat on every pod): a hit costs no allocation, and the
 * records the CRI source keeps share one string instead of a copy each.
 * A `TextDecoder` call per string was most of a relist's decoding.
 */
const INTERN_SLOTS = 4096;
/** Longer strings (container IDs are 64 bytes) are mostly unique: not interned. */
const INTERN_MAX_BYTES = 40;
/** Below V8's shortest cons string: appending characters builds flat strings. */
const APPEND_MAX_BYTES = 12;
const interned: Array<string | undefined> = new Array(INTERN_SLOTS);

/** Reads `buf[start..end)` as text, through the intern table when it is short ASCII. */
function readText(buf: Uint8Array, start: number, end: number): string {
  const n = end - start;
  if (n <= INTERN_MAX_BYTES) {
    let hash = n;
    let i = start;
    for (; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) break;
      hash = Math.imul(hash ^ c, 16777619);
    }
    if (i === end) {
      const slot = hash & (INTERN_SLOTS - 1);
      const hit = interned[slot];
      if (hit !== undefined && hit.length === n) {
        let j = 0;
        while (j < n && hit.charCodeAt(j) === buf[start + j]) j++;
        if (j === n) return hit;
      }
      let text: string;
      if (n <= APPEND_MAX_BYTES) {
        text = "";
        for (let j = start; j < end; j++) text += String.fromCharCode(buf[j]!);
      } else text = LOOSE_UTF8.decode(buf.subarray(start, end));
      interned[slot] = text;
      return text;
    }
  }
  return LOOSE_UTF8.decode(buf.subarray(start, end));
}

/** Whether `buf[start..start+length)` is ASCII and spells `text`. */
function spells(buf: Uint8Array, start: number, length: number, text: string): boolean {
  if (text.length !== length) return false;
  for (let j = 0; j < length; j++) {
    const c = buf[start + j]!;
    if (c >= 0x80 || c !== text.charCodeAt(j)) return false;
  }
  return true;
}

/** A varint has at most 10 bytes. */
const MAX_VARINT_BYTES = 10;

/**
 * Reads protobuf wire values.
 *
 * @example Usage
 * ```ts
 * import { ProtoReader } from "./proto_reader.ts";
 * const r = new ProtoReader(new Uint8Array([0x08, 0x96, 0x01]));
 * r.tag(); // 8: field 1, varint
 * r.uint32(); // 150
 * ```
 */
export class ProtoReader {
  readonly buf: Uint8Array;
  pos = 0;
  len: number;
  /** The message being read, for errors; `undefined`: errors as the reference. */
  what: string | undefined;

  /**
   * @param buf The bytes to read.
   * @param what The message's name: errors are then `TypeError`s naming it.
   */
  constructor(buf: Uint8Array, what?: string) {
    this.buf = buf;
    this.len = buf.length;
    this.what = what;
  }

  /** Every byte of the current message has been read. */
  get done(): boolean {
    return this.pos >= this.len;
  }

  /**
   * Fails the read.
   *
   * @param reason What is wrong, and where.
   * @param pastEnd A read past the end (a `RangeError` without a message name).
   * @throws {Error} Always.
   */
  fail(reason: string, pastEnd = false): never {
    if (this.what !== undefined) throw new TypeError(`Cannot decode ${this.what}: ${reason}`);
    throw pastEnd ? new RangeError(reason) : new Error(reason);
  }

  #truncated(start: number): never {
    return this.fail(`truncated varint at offset ${start}`, true);
  }

  #pastEnd(length: number, start: number): never {
    return this.fail(`length ${length} at offset ${start} runs past the end of the input`, true);
  }

  /** @returns A varint's low 32 bits, unsigned (up to 10 bytes are read). */
  uint32(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos < this.len) {
      const b = buf[pos]!;
      if (b < 0x80) {
        this.pos = pos + 1;
        return b;
      }
    }
    const start = pos;
    let value = 0;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (pos >= this.len) this.#truncated(start);
      const b = buf[pos++]!;
      if (i < 4) value |= (b & 0x7f) << (i * 7);
      else if (i === 4) value |= (b & 0x0f) << 28;
      if (b < 0x80) {
        this.pos = pos;
        return value >>> 0;
      }
    }
    return this.fail(`varint longer than 10 bytes at offset ${start}`);
  }

  /** @returns A field tag (at most 5 bytes, at most 32 bits). */
  tag(): number {
    const pos = this.pos;
    if (pos < this.len && this.buf[pos]! < 0x80) {
      this.pos = pos + 1;
      return this.buf[pos]!;
    }
    const value = this.uint32();
    if (this.pos - pos > 5 || (this.pos - pos === 5 && (this.buf[pos + 4]! & 0x70) !== 0)) {
      this.fail(`invalid tag encoding at offset ${pos}`);
    }
    return value;
  }

  /** @returns A length prefix that fits in what is left of the message. */
  size(): number {
    const start = this.pos;
    let value: number;
    if (start < this.len && this.buf[start]! < 0x80) {
      value = this.buf[start]!;
      this.pos = start + 1;
    } else value = this.uint64();
    if (value > this.len - this.pos) this.#pastEnd(value, start);
    return value;
  }

  /** @returns A varint's low 32 bits, signed. */
  int32(): number {
    return this.uint32() | 0;
  }

  /** @returns A varint: true when any of its bits is set. */
  bool(): boolean {
    const start = this.pos;
    let value = false;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.pos >= this.len) this.#truncated(start);
      const b = this.buf[this.pos++]!;
      if ((b & 0x7f) !== 0) value = true;
      if (b < 0x80) return value;
    }
    return this.fail(`varint longer than 10 bytes at offset ${start}`);
  }

  /** @returns A signed 64-bit varint as the nearest number. */
  int64(): number {
    return this.#long(false);
  }

  /** @returns An unsigned 64-bit varint as the nearest number. */
  uint64(): number {
    return this.#long(true);
  }

  #long(unsigned: boolean): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos < this.len) {
      const b0 = buf[pos]!;
      if (b0 < 0x80) {
        this.pos = pos + 1;
        return b0;
      }
    }
    const start = pos;
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (pos >= this.len) this.#truncated(start);
      const b = buf[pos++]!;
      if (i < 4) lo |= (b & 0x7f) << (i * 7);
      else if (i === 4) {
        lo |= (b & 0x7f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (i * 7 - 32);
      if (b < 0x80) {
        this.pos = pos;
        lo >>>= 0;
        hi >>>= 0;
        if (!unsigned && hi >>> 31) {
          // Two's complement, negated, as the reference converts a signed long.
          const nlo = (~lo + 1) >>> 0;
          let nhi = ~hi >>> 0;
          if (nlo === 0) nhi = (nhi + 1) >>> 0;
          return -(nlo + nhi * 4294967296);
        }
        return lo + hi * 4294967296;
      }
    }
    return this.fail(`varint longer than 10 bytes at offset ${start}`);
  }

  /** @returns A length-delimited value's bytes (a view into the input). */
  bytes(): Uint8Array {
    const length = this.size();
    const start = this.pos;
    this.pos = start + length;
    return this.buf.subarray(start, start + length);
  }

  /**
   * {@linkcode ProtoReader.string}, with a guess: when the bytes are ASCII and
   * spell `known`, `known` itself, neither decoded again nor copied (a list's
   * IDs, which repeat from one answer to the next).
   *
   * @param known What the value likely is.
   * @returns The value as text.
   */
  stringLike(known: string | undefined): string {
    const length = this.size();
    const start = this.pos;
    this.pos = start + length;
    if (known !== undefined && spells(this.buf, start, length, known)) return known;
    return length === 0 ? "" : readText(this.buf, start, start + length);
  }

  /** @returns A length-delimited value as text (flat; invalid bytes as U+FFFD). */
  string(): string {
    return this.stringLike(undefined);
  }

  /**
   * Reads a sub-message's length and narrows `len` to its end.
   *
   * @returns The enclosing end, to hand back to {@linkcode ProtoReader.leave}.
   */
  enter(): number {
    const length = this.size();
    const outer = this.len;
    this.len = this.pos + length;
    return outer;
  }

  /**
   * Checks that a sub-message was read to its end and restores the enclosing end.
   *
   * @param outer What {@linkcode ProtoReader.enter} returned.
   */
  leave(outer: number): void {
    if (this.pos !== this.len) this.fail(`message ends inside a field at offset ${this.pos}`, true);
    this.len = outer;
  }

  /**
   * Skips one value of a field that is not read.
   *
   * @param wireType The field's wire type.
   * @param depth The nesting depth, bounding groups within groups.
   * @param fieldNumber The field's number (0 is never valid).
   */
  skipType(wireType: number, depth: number, fieldNumber: number): void {
    if (fieldNumber === 0) this.fail("field number 0");
    switch (wireType) {
      case 0:
        this.uint64();
        return;
      case 1:
        this.skip(8);
        return;
      case 2: {
        const length = this.size();
        this.pos += length;
        return;
      }
      case 3:
        if (depth >= MAX_DEPTH) this.fail(`groups nested deeper than ${MAX_DEPTH}`);
        for (;;) {
          if (this.done) this.fail(`unterminated group "${fieldNumber}"`, true);
          const tag = this.tag();
          if ((tag & 7) === 4) {
            if (tag >>> 3 !== fieldNumber) this.fail(`mismatched end of group "${fieldNumber}"`);
            return;
          }
          this.skipType(tag & 7, depth + 1, tag >>> 3);
        }
      case 5:
        this.skip(4);
        return;
      default:
        this.fail(`invalid wire type "${wireType}" for field "${fieldNumber}"`);
    }
  }

  /**
   * Skips a fixed-size value.
   *
   * @param count Its size in bytes.
   */
  skip(count: number): void {
    if (count > this.len - this.pos) {
      this.fail(
        `truncated fixed-size field at offset ${this.pos} runs past the end of the input`,
        true,
      );
    }
    this.pos += count;
  }
}
