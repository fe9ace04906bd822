/**
 * Protobuf bytes ⇄ plain objects for any message type of a
 * {@linkcode ProtoSchema}, compiled once per type into closures (one per
 * field, indexed by field number): no message objects in between and no
 * reflection per message. The CRI client, the simulated runtime and the
 * fake CRI servers of the tests use it through `sources/cri/cri_codec.ts`.
 *
 * Decoded objects have the field names of the descriptor, every field
 * present (proto3 defaults filled in), int64 as the nearest `number`, enums
 * as numbers (open: unknown values are kept), absent sub-messages as
 * `null`, repeated fields as arrays and maps as objects. Unknown fields,
 * and fields whose wire type is not the schema's, are skipped (as Go and
 * the reference JS library does); a singular sub-message seen twice is merged. Truncated
 * or malformed input throws an `Error` (`RangeError` when a length runs past
 * its message).
 *
 * Encoding follows the reference's `fromObject` + `encode` byte for byte: fields
 * in number order, proto3 scalars left out at their default, sub-messages
 * written when present (even empty), map entries in the object's key order
 * with key and value always written, repeated numbers packed in proto3.
 *
 * Supported field types: `string`, `bytes`, `bool`, `int32`, `uint32`,
 * `int64`, `uint64`, enums, messages; maps with string keys.
 *
 * @module
 */

import { Writer } from "./_pod_writer.ts";
import { ProtoReader, RECURSION_LIMIT } from "./proto_reader.ts";
import type { FieldInfo, MessageType, ProtoSchema, ScalarType } from "./schema.ts";

/** A decoded value. */
export type PlainValue = string | number | boolean | null | Uint8Array | PlainValue[] | PlainObject;

/** A decoded message. */
export interface PlainObject {
  [field: string]: PlainValue;
}

/** Encodes and decodes one message type. */
export interface PlainCodec {
  /** Full name without a leading dot. */
  readonly name: string;
  /**
   * @param value The message's fields; missing or `null` ones are left out.
   * @returns Its protobuf encoding.
   * @throws {TypeError} When a message, list or map field holds something else.
   */
  encode(value: object): Uint8Array;
  /**
   * @param bytes A protobuf encoding of the type.
   * @returns The message, defaults filled in.
   * @throws {Error} When the bytes are truncated or malformed.
   */
  decode(bytes: Uint8Array): PlainObject;
}

type ReadValue = (r: ProtoReader) => PlainValue;
/** Reads one occurrence of a field; false when its wire type is not the schema's. */
type FieldDecoder = (r: ProtoReader, wireType: number, out: PlainObject, depth: number) => boolean;
type FieldEncoder = (w: Writer, value: unknown, depth: number) => void;

interface CompiledType {
  readonly type: MessageType;
  create(): PlainObject;
  decodeFields(r: ProtoReader, out: PlainObject, depth: number): void;
  encode(w: Writer, value: unknown, depth: number): void;
}

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

const SCALAR_READERS: Readonly<Partial<Record<ScalarType, ReadValue>>> = {
  string: (r) => r.string(),
  bytes: (r) => r.bytes().slice(),
  bool: (r) => r.bool(),
  int32: (r) => r.int32(),
  uint32: (r) => r.uint32(),
  int64: (r) => r.int64(),
  uint64: (r) => r.uint64(),
};

const SCALAR_DEFAULTS: Readonly<Partial<Record<ScalarType, PlainValue>>> = {
  string: "",
  bool: false,
  int32: 0,
  uint32: 0,
  int64: 0,
  uint64: 0,
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function fieldName(owner: MessageType, field: FieldInfo): string {
  return `${owner.fullName}.${field.name}`;
}

/** Sets a map entry as an own property, even for the key `__proto__`. */
function setEntry(map: PlainObject, key: string, value: PlainValue): void {
  if (key === "__proto__") {
    Object.defineProperty(map, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else map[key] = value;
}

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
interface ScalarWriter {
  readonly wireType: number;
  convert(value: unknown): number | string | boolean | Uint8Array | undefined;
  write(w: Writer, converted: never): void;
  /** The converted value is the proto3 default (not written for a singular field). */
  isDefault(converted: never): boolean;
}

function scalarWriter(field: FieldInfo): ScalarWriter {
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

function scalarReader(field: FieldInfo, where: string): { read: ReadValue; wireType: number } {
  const value = field.value;
  if (value.kind === "enum") return { read: (r) => r.int32(), wireType: WIRE_VARINT };
  if (value.kind !== "scalar") throw new TypeError("not a scalar");
  const read = SCALAR_READERS[value.type];
  if (read === undefined) {
    throw new TypeError(`Cannot compile "${where}": type "${value.type}" is not supported`);
  }
  const wireType = value.type === "string" || value.type === "bytes" ? WIRE_LEN : WIRE_VARINT;
  return { read, wireType };
}

function scalarDefault(field: FieldInfo): PlainValue {
  const value = field.value;
  if (value.kind === "enum") return value.defaultValue;
  if (value.kind === "message") return null;
  if (value.type === "bytes") return new Uint8Array(0);
  return SCALAR_DEFAULTS[value.type] ?? 0;
}

/** Compiled types of every schema, by full name. */
const COMPILED = new WeakMap<ProtoSchema, Map<string, CompiledType>>();

function compiledType(schema: ProtoSchema, type: MessageType): CompiledType {
  let bySchema = COMPILED.get(schema);
  if (bySchema === undefined) COMPILED.set(schema, bySchema = new Map());
  const known = bySchema.get(type.fullName);
  if (known !== undefined) return known;
  const compiled = compileType(schema, type, bySchema);
  return compiled;
}

function compileType(
  schema: ProtoSchema,
  type: MessageType,
  registry: Map<string, CompiledType>,
): CompiledType {
  // The decoded object's keys in the reference's toObject order: repeated
  // fields, then maps, then the others, each in field-number order.
  const template: PlainObject = {};
  const arrayKeys: string[] = [];
  const mapKeys: string[] = [];
  const bytesKeys: string[] = [];
  for (const f of type.fields) {
    if (f.repeated) {
      template[f.name] = null;
      arrayKeys.push(f.name);
    }
  }
  for (const f of type.fields) {
    if (f.map) {
      template[f.name] = null;
      mapKeys.push(f.name);
    }
  }
  for (const f of type.fields) {
    if (!f.repeated && !f.map) template[f.name] = scalarDefault(f);
    if (!f.repeated && !f.map && f.value.kind === "scalar" && f.value.type === "bytes") {
      bytesKeys.push(f.name);
    }
  }
  const readers: Array<FieldDecoder | undefined> = [];
  const names: string[] = [];
  const writers: FieldEncoder[] = [];
  const fullName = type.fullName;
  const compiled: CompiledType = {
    type,
    create() {
      const out: PlainObject = { ...template };
      for (let i = 0; i < arrayKeys.length; i++) out[arrayKeys[i]!] = [];
      for (let i = 0; i < mapKeys.length; i++) out[mapKeys[i]!] = {};
      for (let i = 0; i < bytesKeys.length; i++) out[bytesKeys[i]!] = new Uint8Array(0);
      return out;
    },
    decodeFields(r, out, depth) {
      if (depth > RECURSION_LIMIT) throw new Error("max depth exceeded");
      while (r.pos < r.len) {
        const tag = r.tag();
        const id = tag >>> 3;
        const wireType = tag & 7;
        const read = readers[id];
        if (read === undefined || !read(r, wireType, out, depth)) r.skipType(wireType, depth, id);
      }
    },
    encode(w, value, depth) {
      if (!isObject(value)) throw new TypeError(`${fullName}: object expected`);
      if (depth > RECURSION_LIMIT) throw new Error("max depth exceeded");
      for (let i = 0; i < writers.length; i++) writers[i]!(w, value[names[i]!], depth);
    },
  };
  // Registered before the fields compile, so recursive types terminate.
  registry.set(fullName, compiled);
  for (const f of type.fields) {
    readers[f.id] = fieldDecoder(schema, type, f);
    names.push(f.name);
    writers.push(fieldEncoder(schema, type, f));
  }
  return compiled;
}

/** Reads a length-delimited sub-message into `out`. */
function readMessage(r: ProtoReader, sub: CompiledType, out: PlainObject, depth: number): void {
  const outer = r.enter();
  sub.decodeFields(r, out, depth + 1);
  r.leave(outer);
}

function fieldDecoder(schema: ProtoSchema, owner: MessageType, f: FieldInfo): FieldDecoder {
  const key = f.name;
  const where = fieldName(owner, f);
  const value = f.value;
  if (f.map) {
    if (f.keyType !== "string") {
      throw new TypeError(`Cannot compile "${where}": only string map keys are supported`);
    }
    if (value.kind === "message") {
      const sub = compiledType(schema, value);
      return (r, wireType, out, depth) => {
        if (wireType !== WIRE_LEN) return false;
        const outer = r.enter();
        let k = "";
        let v: PlainObject | null = null;
        while (r.pos < r.len) {
          const tag = r.tag();
          const id = tag >>> 3;
          const wt = tag & 7;
          if (id === 1 && wt === WIRE_LEN) k = r.string();
          else if (id === 2 && wt === WIRE_LEN) readMessage(r, sub, v ??= sub.create(), depth);
          else r.skipType(wt, depth, id);
        }
        r.leave(outer);
        setEntry(out[key] as PlainObject, k, v ?? sub.create());
        return true;
      };
    }
    const { read, wireType: valueWire } = scalarReader(f, where);
    const fallback = scalarDefault(f);
    return (r, wireType, out, depth) => {
      if (wireType !== WIRE_LEN) return false;
      const outer = r.enter();
      let k = "";
      let v = fallback;
      while (r.pos < r.len) {
        const tag = r.tag();
        const id = tag >>> 3;
        const wt = tag & 7;
        if (id === 1 && wt === WIRE_LEN) k = r.string();
        else if (id === 2 && wt === valueWire) v = read(r);
        else r.skipType(wt, depth, id);
      }
      r.leave(outer);
      setEntry(out[key] as PlainObject, k, v);
      return true;
    };
  }
  if (value.kind === "message") {
    const sub = compiledType(schema, value);
    if (f.repeated) {
      return (r, wireType, out, depth) => {
        if (wireType !== WIRE_LEN) return false;
        const item = sub.create();
        readMessage(r, sub, item, depth);
        (out[key] as PlainValue[]).push(item);
        return true;
      };
    }
    return (r, wireType, out, depth) => {
      if (wireType !== WIRE_LEN) return false;
      let target = out[key] as PlainObject | null;
      if (target === null) out[key] = target = sub.create();
      readMessage(r, sub, target, depth);
      return true;
    };
  }
  const { read, wireType: valueWire } = scalarReader(f, where);
  if (f.repeated) {
    const packable = valueWire === WIRE_VARINT;
    return (r, wireType, out) => {
      const list = out[key] as PlainValue[];
      if (packable && wireType === WIRE_LEN) {
        const outer = r.enter();
        while (r.pos < r.len) list.push(read(r));
        r.leave(outer);
        return true;
      }
      if (wireType !== valueWire) return false;
      list.push(read(r));
      return true;
    };
  }
  // The common case, written out so the store is the closure's own.
  if (valueWire === WIRE_LEN) {
    return (r, wireType, out) => {
      if (wireType !== WIRE_LEN) return false;
      out[key] = read(r);
      return true;
    };
  }
  return (r, wireType, out) => {
    if (wireType !== WIRE_VARINT) return false;
    out[key] = read(r);
    return true;
  };
}

function fieldEncoder(schema: ProtoSchema, owner: MessageType, f: FieldInfo): FieldEncoder {
  const where = fieldName(owner, f);
  const value = f.value;
  if (f.map) {
    if (f.keyType !== "string") {
      throw new TypeError(`Cannot compile "${where}": only string map keys are supported`);
    }
    const tag = (f.id << 3) | WIRE_LEN;
    if (value.kind === "message") {
      const sub = compiledType(schema, value);
      return (w, map, depth) => {
        if (!map) return;
        if (!isObject(map)) throw new TypeError(`${where}: object expected`);
        for (const k of Object.keys(map)) {
          w.uint32(tag).fork().uint32(10).string(k).uint32(18).fork();
          sub.encode(w, map[k], depth + 1);
          w.ldelim().ldelim();
        }
      };
    }
    const scalar = scalarWriter(f);
    const valueTag = (2 << 3) | scalar.wireType;
    return (w, map) => {
      if (!map) return;
      if (!isObject(map)) throw new TypeError(`${where}: object expected`);
      for (const k of Object.keys(map)) {
        const converted = scalar.convert(map[k]);
        w.uint32(tag).fork().uint32(10).string(k);
        if (converted !== undefined) scalar.write(w.uint32(valueTag), converted as never);
        w.ldelim();
      }
    };
  }
  if (value.kind === "message") {
    const sub = compiledType(schema, value);
    const tag = (f.id << 3) | WIRE_LEN;
    if (f.repeated) {
      return (w, list, depth) => {
        if (!list) return;
        if (!Array.isArray(list)) throw new TypeError(`${where}: array expected`);
        for (const item of list) {
          if (!isObject(item)) throw new TypeError(`${where}: object expected`);
          w.uint32(tag).fork();
          sub.encode(w, item, depth + 1);
          w.ldelim();
        }
      };
    }
    return (w, v, depth) => {
      if (v === undefined || v === null) return;
      if (!isObject(v)) throw new TypeError(`${where}: object expected`);
      w.uint32(tag).fork();
      sub.encode(w, v, depth + 1);
      w.ldelim();
    };
  }
  const scalar = scalarWriter(f);
  if (f.repeated) {
    if (f.packed) {
      const tag = (f.id << 3) | WIRE_LEN;
      return (w, list) => {
        if (!list) return;
        if (!Array.isArray(list)) throw new TypeError(`${where}: array expected`);
        const converted = list.map((item) => scalar.convert(item)).filter((c) => c !== undefined);
        if (converted.length === 0) return;
        w.uint32(tag).fork();
        for (const c of converted) scalar.write(w, c as never);
        w.ldelim();
      };
    }
    const tag = (f.id << 3) | scalar.wireType;
    return (w, list) => {
      if (!list) return;
      if (!Array.isArray(list)) throw new TypeError(`${where}: array expected`);
      for (const item of list) {
        const converted = scalar.convert(item);
        if (converted !== undefined) scalar.write(w.uint32(tag), converted as never);
      }
    };
  }
  const tag = (f.id << 3) | scalar.wireType;
  return (w, v) => {
    if (v === undefined || v === null) return;
    const converted = scalar.convert(v);
    if (converted === undefined || scalar.isDefault(converted as never)) return;
    scalar.write(w.uint32(tag), converted as never);
  };
}

/** The writer every encode uses (encoding is synchronous); finish() copies out. */
const WRITER = new Writer();

/**
 * Returns the codec of one message type of a schema, compiled once.
 *
 * @example Usage
 * ```ts
 * import { plainCodec } from "./plain_codec.ts";
 * import { ProtoSchema } from "./schema.ts";
 * const schema = new ProtoSchema({
 *   nested: { demo: { nested: { Ping: { fields: { text: { type: "string", id: 1 } } } } } },
 * });
 * const codec = plainCodec(schema, "demo.Ping");
 * codec.decode(codec.encode({ text: "hi" })); // { text: "hi" }
 * ```
 *
 * @param schema The schema.
 * @param fullName The message type's full name, without a leading dot.
 * @returns The codec.
 * @throws {TypeError} When the schema has no such type, or it uses an unsupported feature.
 */
export function plainCodec(schema: ProtoSchema, fullName: string): PlainCodec {
  const compiled = compiledType(schema, schema.message(fullName));
  return {
    name: fullName,
    encode(value) {
      const w = WRITER;
      w.reset();
      try {
        compiled.encode(w, value, 0);
        return w.finish();
      } finally {
        w.reset();
      }
    },
    decode(bytes) {
      const r = new ProtoReader(bytes);
      const out = compiled.create();
      compiled.decodeFields(r, out, 0);
      return out;
    },
  };
}
