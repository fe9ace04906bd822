/**
 * How the plain-object codec (`plain_codec.ts`) reads, converts and writes
 * one scalar or enum value, per field type, as the reference JS library does.
 *
 * @module
 */

import type { ProtoReader } from "./proto_reader.ts";
import type { FieldInfo, ScalarType } from "./schema.ts";
import { decodeUtf8, WIRE_TYPE } from "./wire.ts";
import type { Writer } from "./writer.ts";

/** Wire type of varints. */
export const WIRE_VARINT = WIRE_TYPE.varint;
/** Wire type of length-delimited values. */
export const WIRE_LEN = WIRE_TYPE.lengthDelimited;

/** A scalar or enum value as read. */
export type ScalarValue = string | number | boolean | Uint8Array;

/** Reads one value. */
export type ReadValue = (r: ProtoReader) => ScalarValue;

const SCALAR_READERS: Readonly<Partial<Record<ScalarType, ReadValue>>> = {
  string: (r) => r.string(),
  bytes: (r) => r.bytes().slice(),
  bool: (r) => r.bool(),
  int32: (r) => r.int32(),
  uint32: (r) => r.uint32(),
  int64: (r) => r.int64(),
  uint64: (r) => r.uint64(),
};

const TWO_32 = 4294967296;
const TWO_63 = 9223372036854775808;
const TWO_64 = 18446744073709551616;

/** Writes an int64 from a number as the reference does (Long.fromNumber: truncated, saturated). */
function writeInt64(w: Writer, n: number): void {
  if (n <= -TWO_63) w.int64Bits(0, 0x80000000);
  else if (n + 1 >= TWO_63) w.int64Bits(0xffffffff, 0x7fffffff);
  else w.int64(n);
}

/** Writes a uint64 from a number as the reference does (Long.fromNumber, unsigned). */
function writeUint64(w: Writer, n: number): void {
  if (n >= TWO_64) w.int64Bits(0xffffffff, 0xffffffff);
  else w.int64Bits((n % TWO_32) >>> 0, (n / TWO_32) >>> 0);
}

/** A number as the reference's Long.fromValue sees it: NaN is 0, fractions truncated. */
function longNumber(value: unknown, unsigned: boolean): number {
  const n = Math.trunc(Number(value));
  if (Number.isNaN(n) || (unsigned && n < 0)) return 0;
  return n;
}

/**
 * How a scalar or enum value is converted and written. `convert` returns
 * `undefined` when the reference's `fromObject` would drop the value.
 */
export interface ScalarWriter {
  readonly wireType: number;
  convert(value: unknown): number | string | boolean | Uint8Array | undefined;
  write(w: Writer, converted: never): void;
  /** The converted value is the proto3 default (not written for a singular field). */
  isDefault(converted: never): boolean;
}

export function scalarWriter(field: FieldInfo): ScalarWriter {
  const value = field.value;
  if (value.kind === "enum") {
    const defaultValue = value.defaultValue;
    return {
      wireType: WIRE_VARINT,
      convert(v) {
        if (typeof v === "number") return (v | 0) === v ? v : undefined;
        return typeof v === "string" ? value.values.get(v) : undefined;
      },
      write: (w, n: number) => void w.int32(n),
      isDefault: (n: number) => n === defaultValue,
    };
  }
  if (value.kind !== "scalar") throw new TypeError("not a scalar");
  switch (value.type) {
    case "string":
      return {
        wireType: WIRE_LEN,
        convert: (v) => typeof v === "string" ? v : String(v),
        write: (w, s: string) => void w.string(s),
        isDefault: (s: string) => s === "",
      };
    case "bytes":
      return {
        wireType: WIRE_LEN,
        convert: (v) => v instanceof Uint8Array ? v : undefined,
        write: (w, b: Uint8Array) => void w.bytes(b),
        isDefault: (b: Uint8Array) => b.length === 0,
      };
    case "bool":
      return {
        wireType: WIRE_VARINT,
        convert: (v) => Boolean(v),
        write: (w, b: boolean) => void w.bool(b),
        isDefault: (b: boolean) => !b,
      };
    case "int32":
      return {
        wireType: WIRE_VARINT,
        convert: (v) => Number(v) | 0,
        write: (w, n: number) => void w.int32(n),
        isDefault: (n: number) => n === 0,
      };
    case "uint32":
      return {
        wireType: WIRE_VARINT,
        convert: (v) => Number(v) >>> 0,
        write: (w, n: number) => void w.uint32(n),
        isDefault: (n: number) => n === 0,
      };
    case "int64":
      return {
        wireType: WIRE_VARINT,
        convert: (v) => longNumber(v, false),
        write: writeInt64,
        isDefault: (n: number) => n === 0,
      };
    case "uint64":
      return {
        wireType: WIRE_VARINT,
        convert: (v) => longNumber(v, true),
        write: writeUint64,
        isDefault: (n: number) => n === 0,
      };
    default:
      throw new TypeError(`Cannot compile field of type "${value.type}": not supported`);
  }
}

export function scalarReader(
  field: FieldInfo,
  where: string,
  strict: boolean,
): { read: ReadValue; wireType: number } {
  const value = field.value;
  if (value.kind === "enum") return { read: (r) => r.int32(), wireType: WIRE_VARINT };
  if (value.kind !== "scalar") throw new TypeError("not a scalar");
  if (strict && value.type === "string") {
    const invalid = `field "${field.protoName}" is not valid UTF-8`;
    return { read: (r) => textOrFail(r, invalid), wireType: WIRE_LEN };
  }
  if (strict && value.type === "bytes") return { read: (r) => r.bytes(), wireType: WIRE_LEN };
  const read = SCALAR_READERS[value.type];
  if (read === undefined) {
    throw new TypeError(`Cannot compile "${where}": type "${value.type}" is not supported`);
  }
  const wireType = value.type === "string" || value.type === "bytes" ? WIRE_LEN : WIRE_VARINT;
  return { read, wireType };
}

function textOrFail(r: ProtoReader, invalid: string): string {
  const bytes = r.bytes();
  try {
    return decodeUtf8(bytes);
  } catch {
    return r.fail(invalid);
  }
}
