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
 * written when present (even empty; a `Uint8Array` given for one is taken as
 * its encoding and written as it is), map entries in the object's key order
 * with key and value always written, repeated numbers packed in proto3.
 *
 * A oneof is decoded with one more key, the oneof's name, holding the name
 * of the member read last (`null` when none); its members, and proto3
 * `optional` fields, are written whenever they are set, even at their default.
 *
 * A strict codec (for hostile input: requests, the kubelet's answers) reads
 * the same values but fails with a `TypeError` naming the message and the
 * field for what a lenient one lets through: a known field with another wire
 * type, a string that is not UTF-8. Its `bytes` values are views into the
 * input, not copies.
 *
 * Supported field types: `string`, `bytes`, `bool`, `int32`, `uint32`,
 * `int64`, `uint64`, enums, messages; maps with string keys.
 *
 * @module
 */

import { Writer } from "./writer.ts";
import { ProtoReader } from "./proto_reader.ts";
import { scalarReader, scalarWriter, WIRE_LEN, WIRE_VARINT } from "./_scalar_codecs.ts";
import { MAX_DEPTH } from "./wire.ts";
import {
  type DescriptorNode,
  type FieldInfo,
  type MessageType,
  ProtoSchema,
  type ScalarType,
} from "./schema.ts";

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

/** Reads one occurrence of a field; false when its wire type is not the schema's. */
type FieldDecoder = (r: ProtoReader, wireType: number, out: PlainObject, depth: number) => boolean;
type FieldEncoder = (w: Writer, value: unknown, depth: number) => void;

interface CompiledType {
  readonly type: MessageType;
  /** The name strict errors give it: the last part of its full name. */
  readonly shortName: string;
  create(): PlainObject;
  decodeFields(r: ProtoReader, out: PlainObject, depth: number): void;
  encode(w: Writer, value: unknown, depth: number): void;
}

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

function scalarDefault(field: FieldInfo): PlainValue {
  const value = field.value;
  if (value.kind === "enum") return value.defaultValue;
  if (value.kind === "message") return null;
  if (value.type === "bytes") return new Uint8Array(0);
  return SCALAR_DEFAULTS[value.type] ?? 0;
}

/** Compiled types of every schema, by full name, strict ones with a leading "!". */
const COMPILED = new WeakMap<ProtoSchema, Map<string, CompiledType>>();

function compiledType(schema: ProtoSchema, type: MessageType, strict: boolean): CompiledType {
  let bySchema = COMPILED.get(schema);
  if (bySchema === undefined) COMPILED.set(schema, bySchema = new Map());
  const known = bySchema.get(strict ? `!${type.fullName}` : type.fullName);
  if (known !== undefined) return known;
  return compileType(schema, type, bySchema, strict);
}

function compileType(
  schema: ProtoSchema,
  type: MessageType,
  registry: Map<string, CompiledType>,
  strict: boolean,
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
    if (f.oneof !== undefined) template[f.oneof] = null;
    if (!f.repeated && !f.map) template[f.name] = scalarDefault(f);
    if (!f.repeated && !f.map && f.value.kind === "scalar" && f.value.type === "bytes") {
      bytesKeys.push(f.name);
    }
  }
  const readers: Array<FieldDecoder | undefined> = [];
  /** Per field number: its name in the `.proto` file and its wire type, for strict errors. */
  const protoNames: string[] = [];
  const wireTypes: number[] = [];
  const names: string[] = [];
  const writers: FieldEncoder[] = [];
  const fullName = type.fullName;
  const compiled: CompiledType = {
    type,
    shortName: fullName.slice(fullName.lastIndexOf(".") + 1),
    create() {
      const out: PlainObject = { ...template };
      for (let i = 0; i < arrayKeys.length; i++) out[arrayKeys[i]!] = [];
      for (let i = 0; i < mapKeys.length; i++) out[mapKeys[i]!] = {};
      for (let i = 0; i < bytesKeys.length; i++) out[bytesKeys[i]!] = new Uint8Array(0);
      return out;
    },
    decodeFields(r, out, depth) {
      if (depth > MAX_DEPTH) r.fail(`messages nested deeper than ${MAX_DEPTH}`);
      while (r.pos < r.len) {
        const tag = r.tag();
        const id = tag >>> 3;
        const wireType = tag & 7;
        const read = readers[id];
        if (read === undefined) r.skipType(wireType, depth, id);
        else if (!read(r, wireType, out, depth)) {
          // Skipped first, so a malformed value is reported as such.
          r.skipType(wireType, depth, id);
          if (strict) {
            r.fail(
              `field "${protoNames[id]}" has wire type ${wireType}, expected ${wireTypes[id]}`,
            );
          }
        }
      }
    },
    encode(w, value, depth) {
      if (!isObject(value)) throw new TypeError(`${fullName}: object expected`);
      if (depth > MAX_DEPTH) throw new Error(`messages nested deeper than ${MAX_DEPTH}`);
      for (let i = 0; i < writers.length; i++) writers[i]!(w, value[names[i]!], depth);
    },
  };
  // Registered before the fields compile, so recursive types terminate.
  registry.set(strict ? `!${fullName}` : fullName, compiled);
  for (const f of type.fields) {
    const decode = fieldDecoder(schema, type, f, strict);
    const oneof = f.oneof;
    readers[f.id] = oneof === undefined ? decode : (r, wireType, out, depth) => {
      if (!decode(r, wireType, out, depth)) return false;
      out[oneof] = f.name;
      return true;
    };
    protoNames[f.id] = f.protoName;
    wireTypes[f.id] = expectedWireType(f);
    names.push(f.name);
    writers.push(fieldEncoder(schema, type, f, strict));
  }
  return compiled;
}

function expectedWireType(f: FieldInfo): number {
  if (f.map || f.value.kind === "message") return WIRE_LEN;
  if (f.value.kind === "enum") return WIRE_VARINT;
  return f.value.type === "string" || f.value.type === "bytes" ? WIRE_LEN : WIRE_VARINT;
}

/** Reads a length-delimited sub-message into `out`; a strict reader names it in errors. */
function readMessage(r: ProtoReader, sub: CompiledType, out: PlainObject, depth: number): void {
  const outer = r.enter();
  const what = r.what;
  if (what !== undefined) r.what = sub.shortName;
  sub.decodeFields(r, out, depth + 1);
  r.leave(outer);
  r.what = what;
}

function fieldDecoder(
  schema: ProtoSchema,
  owner: MessageType,
  f: FieldInfo,
  strict: boolean,
): FieldDecoder {
  const key = f.name;
  const where = fieldName(owner, f);
  const value = f.value;
  if (f.map) {
    if (f.keyType !== "string") {
      throw new TypeError(`Cannot compile "${where}": only string map keys are supported`);
    }
    if (value.kind === "message") {
      const sub = compiledType(schema, value, strict);
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
    const { read, wireType: valueWire } = scalarReader(f, where, strict);
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
    const sub = compiledType(schema, value, strict);
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
  const { read, wireType: valueWire } = scalarReader(f, where, strict);
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

function fieldEncoder(
  schema: ProtoSchema,
  owner: MessageType,
  f: FieldInfo,
  strict: boolean,
): FieldEncoder {
  const where = fieldName(owner, f);
  const value = f.value;
  if (f.map) {
    if (f.keyType !== "string") {
      throw new TypeError(`Cannot compile "${where}": only string map keys are supported`);
    }
    const tag = (f.id << 3) | WIRE_LEN;
    if (value.kind === "message") {
      const sub = compiledType(schema, value, strict);
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
    const sub = compiledType(schema, value, strict);
    const tag = (f.id << 3) | WIRE_LEN;
    if (f.repeated) {
      return (w, list, depth) => {
        if (!list) return;
        if (!Array.isArray(list)) throw new TypeError(`${where}: array expected`);
        for (const item of list) {
          if (item instanceof Uint8Array) {
            w.uint32(tag).bytes(item);
            continue;
          }
          if (!isObject(item)) throw new TypeError(`${where}: object expected`);
          w.uint32(tag).fork();
          sub.encode(w, item, depth + 1);
          w.ldelim();
        }
      };
    }
    return (w, v, depth) => {
      if (v === undefined || v === null) return;
      if (v instanceof Uint8Array) return void w.uint32(tag).bytes(v);
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
  const presence = f.explicitPresence;
  return (w, v) => {
    if (v === undefined || v === null) return;
    const converted = scalar.convert(v);
    if (converted === undefined || (!presence && scalar.isDefault(converted as never))) return;
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
 * @param options `strict`: for hostile input (see the module's documentation).
 * @returns The codec.
 * @throws {TypeError} When the schema has no such type, or it uses an unsupported feature.
 */
export function plainCodec(
  schema: ProtoSchema,
  fullName: string,
  options: { readonly strict?: boolean } = {},
): PlainCodec {
  const strict = options.strict ?? false;
  const compiled = compiledType(schema, schema.message(fullName), strict);
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
      const r = new ProtoReader(bytes, strict ? compiled.shortName : undefined);
      const out = compiled.create();
      compiled.decodeFields(r, out, 0);
      return out;
    },
  };
}

/**
 * What an encoder accepts for a message of type `T`: any subset of its
 * fields, recursively; `null` or a missing field means the proto3 default;
 * a sub-message may be given already encoded.
 */
export type MessageInit<T> = { readonly [K in keyof T]?: FieldInit<NonNullable<T[K]>> | null };
type FieldInit<V> = V extends string | number | boolean | Uint8Array ? V
  : V extends readonly (infer U)[] ? readonly FieldInit<U>[]
  : V extends object ? MessageInit<V> | Uint8Array
  : V;

/** Encodes and decodes one message type whose decoded shape is `T`. */
export interface TypedCodec<T> {
  /**
   * @param value The message's fields.
   * @returns Its protobuf encoding.
   */
  encode(value: MessageInit<T>): Uint8Array;
  /**
   * @param bytes A protobuf encoding of the type.
   * @returns The message, defaults filled in.
   * @throws {Error} When the bytes are truncated or malformed.
   */
  decode(bytes: Uint8Array): T;
}

const SCHEMAS = new WeakMap<DescriptorNode, ProtoSchema>();

/**
 * {@linkcode plainCodec} for a type whose decoded shape `T` is generated from
 * the same descriptor (`scripts/gen_wire_types.ts`): the one place a decoded
 * object is given its type.
 *
 * @example Usage
 * ```ts
 * import { typedCodec } from "./plain_codec.ts";
 * import { POD_QUERY_DESCRIPTOR, type Selector } from "./generated/pod_query_types.ts";
 * const codec = typedCodec<Selector>(POD_QUERY_DESCRIPTOR, "podsapi.v1.Selector");
 * codec.decode(codec.encode({ namespace: "ns" })).namespace; // "ns"
 * ```
 *
 * @typeParam T The generated interface of the message type.
 * @param descriptor The generated descriptor.
 * @param fullName The message type's full name, without a leading dot.
 * @param options As {@linkcode plainCodec}'s.
 * @returns The codec.
 * @throws {TypeError} When the schema has no such type.
 */
export function typedCodec<T>(
  descriptor: DescriptorNode,
  fullName: string,
  options: { readonly strict?: boolean } = {},
): TypedCodec<T> {
  let schema = SCHEMAS.get(descriptor);
  if (schema === undefined) SCHEMAS.set(descriptor, schema = new ProtoSchema(descriptor));
  const codec = plainCodec(schema, fullName, options);
  return {
    encode: (value) => codec.encode(value),
    // `T` is generated from `descriptor`, field for field.
    decode: (bytes) => codec.decode(bytes) as unknown as T,
  };
}
