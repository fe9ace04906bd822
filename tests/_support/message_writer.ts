/**
 * Writing a protobuf message field by field, in the order of the calls:
 * for bytes no schema describes (input crafted to be unusual, messages
 * nested by hand). Scalars at their default (0, "", false) are left out as
 * proto3 does; a message field is written even when empty (it is "set").
 * It writes through the one protobuf {@linkcode Writer}.
 *
 * @module
 */

import { WIRE_TYPE } from "../../src/proto/wire.ts";
import { Writer } from "../../src/proto/writer.ts";

/**
 * Writes a message's fields in the order of the calls.
 *
 * @example Usage
 * ```ts
 * import { MessageWriter } from "./message_writer.ts";
 * const bytes = new MessageWriter().string(1, "web").varint(2, 3).finish();
 * console.assert(bytes.length === 7);
 * ```
 */
export class MessageWriter {
  readonly #w = new Writer(256);

  #len(field: number): Writer {
    return this.#w.uint32((field << 3) | WIRE_TYPE.lengthDelimited);
  }

  /**
   * A `bytes` field, left out when empty.
   *
   * @param field The field number.
   * @param bytes The value.
   * @returns This writer.
   */
  bytes(field: number, bytes: Uint8Array | undefined): this {
    if (bytes !== undefined && bytes.length > 0) this.#len(field).bytes(bytes);
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
    if (bytes !== undefined) this.#len(field).bytes(bytes);
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
    for (const bytes of items) this.#len(field).bytes(bytes);
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
    return value === "" ? this : this.presentString(field, value);
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
    this.#len(field).string(value);
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
    for (const v of values) this.presentString(field, v);
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
    return value === 0 ? this : this.presentVarint(field, value);
  }

  /**
   * An integer field written even when 0 (a member of a oneof).
   *
   * @param field The field number.
   * @param value The value; negative values are written as int64 does.
   * @returns This writer.
   */
  presentVarint(field: number, value: number): this {
    this.#w.uint32((field << 3) | WIRE_TYPE.varint).int64(value);
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
    const w = this.#len(field).fork();
    for (const v of values) w.int64(v);
    w.ldelim();
    return this;
  }

  /** @returns The serialized message. */
  finish(): Uint8Array {
    return this.#w.finish();
  }
}
