/**
 * Writing protobuf messages by hand: fields are collected, then written once
 * into a buffer of the exact size. Scalars at their default (0, "", false)
 * are left out as proto3 does; a message field is written even when empty
 * (it is "set"). Reading goes through `WireReader` in `wire.ts`, with the
 * helpers at the end of this file for the field kinds several codecs read.
 *
 * @module
 */

import {
  decodeUtf8,
  expect,
  lenFieldSize,
  varintSize,
  WIRE_LEN,
  WIRE_VARINT,
  type WireField,
  WireReader,
  writeLenField,
  writeVarint,
} from "./wire.ts";

const ENCODER = new TextEncoder();

/** 2^64: a negative int64 is written as its two's complement, ten bytes. */
const TWO_64 = 2n ** 64n;
/** Varints at or above 2^63 read back as negative int64 values. */
const TWO_63 = 2 ** 63;

/** The ten varint bytes of a negative int64. */
function negativeVarint(n: number): Uint8Array {
  let v = TWO_64 + BigInt(Math.trunc(n));
  const out = new Uint8Array(10);
  for (let i = 0; i < 10; i++) {
    out[i] = Number(v & 0x7fn) | (i < 9 ? 0x80 : 0);
    v >>= 7n;
  }
  return out;
}

/** The varint bytes of any int64 or uint64 value held in a number. */
function varintBytes(n: number): Uint8Array {
  if (n < 0) return negativeVarint(n);
  const out = new Uint8Array(varintSize(n));
  writeVarint(out, 0, n);
  return out;
}

type Part =
  | { readonly field: number; readonly bytes: Uint8Array }
  | { readonly field: number; readonly varint: Uint8Array };

/**
 * Collects a message's fields, then writes them once with exact sizes.
 *
 * @example Usage
 * ```ts
 * import { MessageWriter } from "./message_writer.ts";
 * const bytes = new MessageWriter().string(1, "web").varint(2, 3).finish();
 * console.assert(bytes.length === 7);
 * ```
 */
export class MessageWriter {
  #parts: Part[] = [];

  /**
   * A `bytes` field, left out when empty.
   *
   * @param field The field number.
   * @param bytes The value.
   * @returns This writer.
   */
  bytes(field: number, bytes: Uint8Array | undefined): this {
    if (bytes !== undefined && bytes.length > 0) this.#parts.push({ field, bytes });
    return this;
  }

  /**
   * A message field, written even when empty (it is set); absent when `undefined`.
   *
   * @param field The field number.
   * @param bytes The serialized message.
   * @returns This writer.
   */
  message(field: number, bytes: Uint8Array | undefined): this {
    if (bytes !== undefined) this.#parts.push({ field, bytes });
    return this;
  }

  /**
   * A repeated message field.
   *
   * @param field The field number.
   * @param items The serialized messages, in order.
   * @returns This writer.
   */
  messages(field: number, items: readonly Uint8Array[]): this {
    for (const bytes of items) this.#parts.push({ field, bytes });
    return this;
  }

  /**
   * A `string` field, left out when empty.
   *
   * @param field The field number.
   * @param value The value.
   * @returns This writer.
   */
  string(field: number, value: string): this {
    return value === "" ? this : this.bytes(field, ENCODER.encode(value));
  }

  /**
   * A `string` field written even when empty (a member of a oneof, or an
   * `optional` field that is set).
   *
   * @param field The field number.
   * @param value The value.
   * @returns This writer.
   */
  presentString(field: number, value: string): this {
    this.#parts.push({ field, bytes: ENCODER.encode(value) });
    return this;
  }

  /**
   * A repeated `string` field.
   *
   * @param field The field number.
   * @param values The values, in order (empty strings included).
   * @returns This writer.
   */
  strings(field: number, values: readonly string[]): this {
    for (const v of values) this.#parts.push({ field, bytes: ENCODER.encode(v) });
    return this;
  }

  /**
   * An integer or enum field (int32, int64, uint32, uint64), left out when 0.
   *
   * @param field The field number.
   * @param value The value; negative values are written as int64 does.
   * @returns This writer.
   */
  varint(field: number, value: number): this {
    if (value !== 0) this.#parts.push({ field, varint: varintBytes(value) });
    return this;
  }

  /**
   * An integer field written even when 0 (a member of a oneof).
   *
   * @param field The field number.
   * @param value The value; negative values are written as int64 does.
   * @returns This writer.
   */
  presentVarint(field: number, value: number): this {
    this.#parts.push({ field, varint: varintBytes(value) });
    return this;
  }

  /**
   * A `bool` field, left out when false.
   *
   * @param field The field number.
   * @param value The value.
   * @returns This writer.
   */
  bool(field: number, value: boolean): this {
    return this.varint(field, value ? 1 : 0);
  }

  /**
   * A packed repeated integer field (proto3's default for repeated scalars),
   * left out when empty.
   *
   * @param field The field number.
   * @param values The values.
   * @returns This writer.
   */
  packed(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const parts = values.map(varintBytes);
    const payload = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let pos = 0;
    for (const p of parts) {
      payload.set(p, pos);
      pos += p.length;
    }
    this.#parts.push({ field, bytes: payload });
    return this;
  }

  /** @returns The serialized message. */
  finish(): Uint8Array {
    let size = 0;
    for (const p of this.#parts) {
      size += "bytes" in p
        ? lenFieldSize(p.field, p.bytes)
        : varintSize(p.field << 3) + p.varint.length;
    }
    const buf = new Uint8Array(size);
    let pos = 0;
    for (const p of this.#parts) {
      if ("bytes" in p) pos = writeLenField(buf, pos, p.field, p.bytes);
      else {
        pos = writeVarint(buf, pos, (p.field << 3) | WIRE_VARINT);
        buf.set(p.varint, pos);
        pos += p.varint.length;
      }
    }
    return buf;
  }
}

/**
 * Reads a `string` field strictly (valid UTF-8).
 *
 * @param reader The reader (names the message).
 * @param f The field.
 * @param name The field's name.
 * @returns The text.
 * @throws {TypeError} For another wire type or invalid UTF-8.
 */
export function readString(reader: WireReader, f: WireField, name: string): string {
  expect(reader, f, WIRE_LEN, name);
  try {
    return decodeUtf8(f.bytes!);
  } catch {
    return reader.fail(`field "${name}" is not valid UTF-8`);
  }
}

/**
 * Reads a message or `bytes` field.
 *
 * @param reader The reader (names the message).
 * @param f The field.
 * @param name The field's name.
 * @returns The payload.
 * @throws {TypeError} For another wire type.
 */
export function readMessage(reader: WireReader, f: WireField, name: string): Uint8Array {
  expect(reader, f, WIRE_LEN, name);
  return f.bytes!;
}

/**
 * Reads a `bool` field.
 *
 * @param reader The reader (names the message).
 * @param f The field.
 * @param name The field's name.
 * @returns The value.
 * @throws {TypeError} For another wire type.
 */
export function readBool(reader: WireReader, f: WireField, name: string): boolean {
  expect(reader, f, WIRE_VARINT, name);
  return f.varint !== 0;
}

/**
 * An int64 read as a number. A negative value (ten varint bytes) cannot be
 * told apart exactly in a double; the IDs read this way (CPUs, NUMA nodes)
 * are never negative, so any negative reads as -1, "none".
 */
function int64Of(v: number): number {
  return v >= TWO_63 ? -1 : v;
}

/**
 * Reads an int64 field (a negative value reads as -1).
 *
 * @param reader The reader (names the message).
 * @param f The field.
 * @param name The field's name.
 * @returns The value.
 * @throws {TypeError} For another wire type.
 */
export function readInt64(reader: WireReader, f: WireField, name: string): number {
  expect(reader, f, WIRE_VARINT, name);
  return int64Of(f.varint);
}

/**
 * Reads one occurrence of a repeated int64 field into `into`: packed (one
 * length-delimited run of varints) or not (one varint), as protobuf accepts both.
 *
 * @param reader The reader (names the message).
 * @param f The field.
 * @param name The field's name.
 * @param into Where the values go.
 * @throws {TypeError} For another wire type or a malformed run.
 */
export function readRepeatedInt64(
  reader: WireReader,
  f: WireField,
  name: string,
  into: number[],
): void {
  if (f.wireType === WIRE_VARINT) {
    into.push(int64Of(f.varint));
    return;
  }
  expect(reader, f, WIRE_LEN, name);
  const run = new WireReader(f.bytes!, `packed field "${name}"`);
  while (!run.done) into.push(int64Of(run.varint()));
}
