/**
 * The protobuf writer: {@linkcode Writer}, a growing buffer reused from one
 * message to the next (the pod encoder and the descriptor-driven codecs), and
 * the exact-size framing of length-delimited fields around bytes encoded
 * already (pods), which copies them once.
 *
 * @module
 */

import { WIRE_TYPE } from "./wire.ts";

/**
 * A protobuf writer for the pod encoder: the subset of the reference JS writer's API (tests compare with it)
 * the codec uses, with the same output byte for byte (int32 negatives as ten
 * bytes, int64 from a JS number as two's complement, strings as UTF-8 with
 * lone surrogates as three bytes, as the reference writes them),
 * but one growing buffer reused across pods and an ASCII fast path for
 * strings. Nested lengths reserve one byte and shift on the rare longer one.
 */
export class Writer {
  buf: Uint8Array;
  pos = 0;
  #stack: number[] = [];

  /** @param size The buffer's first size; it grows as needed. */
  constructor(size = 16384) {
    this.buf = new Uint8Array(size);
  }

  reset(): void {
    this.pos = 0;
    this.#stack.length = 0;
  }

  #reserve(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    if (size < need) size = need;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  uint32(value: number): this {
    let v = value >>> 0;
    this.#reserve(5);
    const buf = this.buf;
    let pos = this.pos;
    while (v > 127) {
      buf[pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
    return this;
  }

  int32(value: number): this {
    const v = value | 0;
    return v < 0 ? this.int64(v) : this.uint32(v);
  }

  int64(value: number): this {
    if (value >= 0 && value <= 0xffffffff) return this.uint32(value);
    const negative = value < 0;
    const abs = negative ? -value : value;
    let lo = abs >>> 0;
    let hi = ((abs - lo) / 4294967296) >>> 0;
    if (negative) {
      hi = ~hi >>> 0;
      lo = ~lo >>> 0;
      if (++lo > 4294967295) {
        lo = 0;
        if (++hi > 4294967295) hi = 0;
      }
    }
    return this.int64Bits(lo, hi);
  }

  /** Writes a 64-bit varint from its two unsigned 32-bit halves. */
  int64Bits(lo: number, hi: number): this {
    this.#reserve(10);
    const buf = this.buf;
    let pos = this.pos;
    while (hi) {
      buf[pos++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    while (lo > 127) {
      buf[pos++] = (lo & 127) | 128;
      lo = lo >>> 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
    return this;
  }

  bool(value: boolean): this {
    this.#reserve(1);
    this.buf[this.pos++] = value ? 1 : 0;
    return this;
  }

  string(value: string): this {
    const n = value.length;
    // ASCII: one byte per code unit, length known up front.
    if (n < 128) {
      this.#reserve(n + 1);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 128) break;
        buf[start + i] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = start + n;
        return this;
      }
    }
    const len = utf8Length(value);
    this.uint32(len);
    this.#reserve(len);
    this.pos = utf8Write(value, this.buf, this.pos);
    return this;
  }

  bytes(value: Uint8Array): this {
    const len = value.length;
    this.uint32(len);
    this.#reserve(len);
    this.buf.set(value, this.pos);
    this.pos += len;
    return this;
  }

  fork(): this {
    this.#reserve(1);
    this.#stack.push(this.pos);
    this.pos += 1;
    return this;
  }

  ldelim(): this {
    const lenPos = this.#stack.pop()!;
    const len = this.pos - lenPos - 1;
    if (len < 128) {
      this.buf[lenPos] = len;
      return this;
    }
    const vlen = len < 16384 ? 2 : len < 2097152 ? 3 : len < 268435456 ? 4 : 5;
    this.#reserve(vlen - 1);
    const buf = this.buf;
    buf.copyWithin(lenPos + vlen, lenPos + 1, lenPos + 1 + len);
    this.pos += vlen - 1;
    let v = len;
    let pos = lenPos;
    while (v > 127) {
      buf[pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[pos] = v;
    return this;
  }

  /** @returns A copy of the bytes written (the buffer is reused). */
  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

/** UTF-8 length as the reference writer computes it (a lone surrogate counts three bytes). */
function utf8Length(s: string): number {
  let len = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 128) len += 1;
    else if (c < 2048) len += 2;
    else if ((c & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      len += 4;
    } else len += 3;
  }
  return len;
}

/** Writes UTF-8 as the reference writer does; returns the new position. */
function utf8Write(s: string, buf: Uint8Array, pos: number): number {
  for (let i = 0; i < s.length; i++) {
    let c1 = s.charCodeAt(i);
    if (c1 < 128) {
      buf[pos++] = c1;
    } else if (c1 < 2048) {
      buf[pos++] = (c1 >> 6) | 192;
      buf[pos++] = (c1 & 63) | 128;
    } else if ((c1 & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c1 = 0x10000 + ((c1 & 0x03ff) << 10) + (s.charCodeAt(++i) & 0x03ff);
      buf[pos++] = (c1 >> 18) | 240;
      buf[pos++] = ((c1 >> 12) & 63) | 128;
      buf[pos++] = ((c1 >> 6) & 63) | 128;
      buf[pos++] = (c1 & 63) | 128;
    } else {
      buf[pos++] = (c1 >> 12) | 224;
      buf[pos++] = ((c1 >> 6) & 63) | 128;
      buf[pos++] = (c1 & 63) | 128;
    }
  }
  return pos;
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
  pos = writeVarint(buf, pos, (field << 3) | WIRE_TYPE.lengthDelimited);
  pos = writeVarint(buf, pos, payload.length);
  buf.set(payload, pos);
  return pos + payload.length;
}
