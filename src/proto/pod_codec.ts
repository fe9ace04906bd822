/**
 * Pod JSON ⇄ Kubernetes protobuf bytes (`k8s.io.api.core.v1.Pod`, as Go's
 * `pod.Marshal()` / `pod.Unmarshal()`), driven by the schema: a walker is
 * compiled once per message type from protobufjs reflection and writes with
 * a protobufjs `Writer`.
 *
 * Kubernetes JSON conventions handled here: inline (embedded) Go structs,
 * `Time` / `MicroTime` as RFC 3339 strings, `Quantity` as a string,
 * `IntOrString` as a number or string, `FieldsV1` as raw JSON, maps as JSON
 * objects, int64 as JSON numbers, bytes as base64.
 *
 * Encoding is deterministic: fields in field-number order, map entries sorted
 * by key (UTF-8 byte order, as Go), so the same pod always gives the same
 * bytes. Only fields present in the JSON are written (Go writes every
 * non-pointer field; its decoder accepts both).
 *
 * @module
 */

import protobuf from "protobufjs";
import {
  canonicalJson,
  compareUtf8,
  isJsonObject,
  type JsonObject,
  type JsonValue,
} from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import {
  formatRfc3339,
  isInt32,
  isInt64,
  parseRfc3339,
  quantityText,
  type Timestamp,
} from "./_k8s_values.ts";
import { type FieldPlan, type MessagePlan, messagePlan, type ValueKind } from "./_pod_plan.ts";
import { POD_TYPE_NAME } from "./load.ts";

/** Thrown by {@linkcode encodePod} for a quantity Go would reject (it would reject the whole pod). */
export class InvalidQuantityError extends RangeError {
  /** JSON path of the bad quantity, e.g. `spec.containers[0].resources.limits["cpu"]`. */
  readonly path: string;
  /** The offending value as text. */
  readonly quantity: string;

  /**
   * @param message The error message.
   * @param options The path and value of the quantity.
   */
  constructor(message: string, options: { path: string; quantity: string }) {
    super(message);
    this.name = "InvalidQuantityError";
    this.path = options.path;
    this.quantity = options.quantity;
  }
}

/** Internal signal from deep inside the walker; encodePod adds the path. */
class BadQuantity extends Error {}

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

/**
 * A protobuf writer for the pod encoder: the subset of protobufjs's `Writer`
 * the codec uses, with the same output byte for byte (int32 negatives as ten
 * bytes, int64 from a JS number as two's complement, strings as UTF-8 with
 * lone surrogates as three bytes, as protobufjs's utf8 module writes them),
 * but one growing buffer reused across pods and an ASCII fast path for
 * strings. Nested lengths reserve one byte and shift on the rare longer one.
 */
class Writer {
  buf: Uint8Array = new Uint8Array(16384);
  pos = 0;
  #stack: number[] = [];

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

/** UTF-8 length as protobufjs computes it (a lone surrogate counts three bytes). */
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

/** Writes UTF-8 as protobufjs's utf8 module does; returns the new position. */
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
type Reader = protobuf.Reader;

/** How one value kind is checked, written and read. */
interface ValueCodec {
  readonly wireType: number;
  /**
   * Checks and converts a JSON value once (a time to seconds, a quantity to
   * its text): {@linkcode SKIP} when it cannot be carried. Invalid quantities
   * throw instead.
   */
  prepare(value: JsonValue): unknown;
  /** Writes tag and a prepared value. */
  write(w: Writer, tag: number, prepared: never): void;
  /** Reads one value whose tag has been consumed. */
  read(r: Reader, limit: number): JsonValue;
}

/** What {@linkcode ValueCodec.prepare} returns for a value the schema cannot carry. */
const SKIP: unique symbol = Symbol("skip");

/** A compiled message: writes a JSON object, reads into one. */
interface CompiledMessage {
  encode(w: Writer, obj: JsonObject): void;
  decodeInto(r: Reader, end: number, out: JsonObject): void;
}

function stringOrSkip(v: JsonValue): string | typeof SKIP {
  return typeof v === "string" ? v : SKIP;
}

function subEnd(r: Reader, limit: number): number {
  const len = r.uint32();
  const end = r.pos + len;
  if (end > limit) throw new TypeError("Cannot decode pod: a length runs past its message");
  return end;
}

function int64ToNumber(r: Reader): number {
  const long = r.int64();
  return long.high * 4294967296 + (long.low >>> 0);
}

function expectWire(actual: number, expected: number, where: string): void {
  if (actual !== expected) {
    throw new TypeError(
      `Cannot decode pod: field "${where}" has wire type ${actual}, expected ${expected}`,
    );
  }
}

/** Skips fields of a special message until its end, reading the known ones via `onField`. */
function readFields(
  r: Reader,
  end: number,
  onField: (id: number, wireType: number) => boolean,
): void {
  while (r.pos < end) {
    const tag = r.uint32();
    if (!onField(tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
  if (r.pos !== end) throw new TypeError("Cannot decode pod: a field runs past its message");
}

function decodeBase64(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function encodeBase64(bytes: Uint8Array): string {
  let raw = "";
  for (let i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i]!);
  return btoa(raw);
}

const TEXT_DECODER = new TextDecoder();
const TEXT_ENCODER = new TextEncoder();

const SCALAR_CODECS: Readonly<Record<Exclude<ValueKind, "message">, ValueCodec>> = {
  string: {
    wireType: WIRE_LEN,
    prepare: stringOrSkip,
    write: (w, tag, v: string) => void w.uint32(tag).string(v),
    read: (r) => r.string(),
  },
  bool: {
    wireType: WIRE_VARINT,
    prepare: (v) => typeof v === "boolean" ? v : SKIP,
    write: (w, tag, v: boolean) => void w.uint32(tag).bool(v),
    read: (r) => r.bool(),
  },
  int32: {
    wireType: WIRE_VARINT,
    prepare: (v) => isInt32(v) ? v : SKIP,
    write: (w, tag, v: number) => void w.uint32(tag).int32(v),
    read: (r) => r.int32(),
  },
  int64: {
    wireType: WIRE_VARINT,
    prepare: (v) => isInt64(v) ? v : SKIP,
    write: (w, tag, v: number) => void w.uint32(tag).int64(v),
    read: int64ToNumber,
  },
  bytes: {
    wireType: WIRE_LEN,
    prepare: (v) => (typeof v === "string" && decodeBase64(v)) || SKIP,
    write: (w, tag, v: Uint8Array) => void w.uint32(tag).bytes(v),
    read: (r) => encodeBase64(r.bytes()),
  },
  time: {
    wireType: WIRE_LEN,
    prepare: (v) => (typeof v === "string" && parseRfc3339(v)) || SKIP,
    write(w, tag, ts: Timestamp) {
      // Time has second precision in Kubernetes: Go writes seconds only.
      w.uint32(tag).fork().uint32(8).int64(Math.floor(ts.seconds)).ldelim();
    },
    read: (r, limit) => readTime(r, limit, false),
  },
  microTime: {
    wireType: WIRE_LEN,
    prepare: (v) => (typeof v === "string" && parseRfc3339(v)) || SKIP,
    write(w, tag, ts: Timestamp) {
      w.uint32(tag).fork().uint32(8).int64(ts.seconds);
      if (ts.nanos !== 0) w.uint32(16).int32(ts.nanos);
      w.ldelim();
    },
    read: (r, limit) => readTime(r, limit, true),
  },
  quantity: {
    wireType: WIRE_LEN,
    prepare(v) {
      const text = quantityText(v);
      if (text === undefined) throw new BadQuantity(String(v));
      return text;
    },
    write: (w, tag, text: string) => void w.uint32(tag).fork().uint32(10).string(text).ldelim(),
    read(r, limit) {
      const end = subEnd(r, limit);
      let text = "";
      readFields(r, end, (id, wt) => {
        if (id !== 1) return false;
        expectWire(wt, WIRE_LEN, "Quantity.string");
        text = r.string();
        return true;
      });
      if (quantityText(text) !== text) {
        throw new RangeError(`Cannot decode pod: invalid quantity "${text}"`);
      }
      return text;
    },
  },
  intOrString: {
    wireType: WIRE_LEN,
    prepare: (v) => typeof v === "string" || isInt32(v) ? v : SKIP,
    write(w, tag, v: string | number) {
      w.uint32(tag).fork();
      if (typeof v === "string") w.uint32(8).int64(1).uint32(26).string(v);
      else w.uint32(8).int64(0).uint32(16).int32(v);
      w.ldelim();
    },
    read(r, limit) {
      const end = subEnd(r, limit);
      let type = 0;
      let intVal = 0;
      let strVal = "";
      readFields(r, end, (id, wt) => {
        if (id === 1) {
          expectWire(wt, WIRE_VARINT, "IntOrString.type");
          type = int64ToNumber(r);
        } else if (id === 2) {
          expectWire(wt, WIRE_VARINT, "IntOrString.intVal");
          intVal = r.int32();
        } else if (id === 3) {
          expectWire(wt, WIRE_LEN, "IntOrString.strVal");
          strVal = r.string();
        } else return false;
        return true;
      });
      return type === 1 ? strVal : intVal;
    },
  },
  fieldsV1: {
    wireType: WIRE_LEN,
    // Raw JSON bytes; canonical (sorted keys) so equal values encode equally.
    prepare: (v) => v === null ? SKIP : TEXT_ENCODER.encode(canonicalJson(v)),
    write(w, tag, raw: Uint8Array) {
      w.uint32(tag).fork().uint32(10).bytes(raw).ldelim();
    },
    read(r, limit) {
      const end = subEnd(r, limit);
      let raw: Uint8Array | undefined;
      readFields(r, end, (id, wt) => {
        if (id !== 1) return false;
        expectWire(wt, WIRE_LEN, "FieldsV1.Raw");
        raw = r.bytes();
        return true;
      });
      if (raw === undefined || raw.length === 0) return {};
      try {
        return JSON.parse(TEXT_DECODER.decode(raw)) as JsonValue;
      } catch (cause) {
        throw new TypeError("Cannot decode pod: managed fields are not valid JSON", { cause });
      }
    },
  },
};

function readTime(r: Reader, limit: number, micro: boolean): string {
  const end = subEnd(r, limit);
  let seconds = 0;
  let nanos = 0;
  readFields(r, end, (id, wt) => {
    if (id === 1) {
      expectWire(wt, WIRE_VARINT, "Time.seconds");
      seconds = int64ToNumber(r);
    } else if (id === 2) {
      expectWire(wt, WIRE_VARINT, "Time.nanos");
      nanos = r.int32();
    } else return false;
    return true;
  });
  return micro ? formatRfc3339(seconds, Math.floor(nanos / 1000)) : formatRfc3339(seconds);
}

const compiled = new Map<string, CompiledMessage>();

function compileMessage(plan: MessagePlan): CompiledMessage {
  const known = compiled.get(plan.name);
  if (known !== undefined) return known;
  // Parallel arrays, in field-number order: the JSON key of each field
  // (`undefined` for an inline struct, which reads the parent object) and
  // its writer. An absent field costs one property read, no call.
  const keys: Array<string | undefined> = [];
  const writers: Array<(w: Writer, v: JsonValue) => void> = [];
  const readers: Array<
    ((r: Reader, wt: number, end: number, out: JsonObject) => void) | undefined
  > = [];
  const message: CompiledMessage = {
    encode(w, obj) {
      const n = keys.length;
      for (let i = 0; i < n; i++) {
        const key = keys[i];
        if (key === undefined) {
          writers[i]!(w, obj);
          continue;
        }
        const v = obj[key];
        if (v !== undefined && v !== null) writers[i]!(w, v);
      }
    },
    decodeInto(r, end, out) {
      while (r.pos < end) {
        const tag = r.uint32();
        const id = tag >>> 3;
        if (id === 0) throw new TypeError(`Cannot decode pod: field number 0 in "${plan.name}"`);
        const read = readers[id];
        if (read === undefined) r.skipType(tag & 7);
        else read(r, tag & 7, end, out);
      }
      if (r.pos !== end) throw new TypeError(`Cannot decode pod: "${plan.name}" is truncated`);
    },
  };
  // Registered before compiling fields so nested references resolve to it.
  compiled.set(plan.name, message);
  for (const field of plan.fields) {
    keys.push(field.inline ? undefined : field.key);
    writers.push(compileFieldEncoder(field));
    readers[field.id] = compileFieldDecoder(plan.name, field);
  }
  return message;
}

function valueCodec(field: FieldPlan): ValueCodec {
  const value = field.value;
  if (value.kind !== "message") return SCALAR_CODECS[value.kind];
  const sub = compileMessage(value.message!);
  return {
    wireType: WIRE_LEN,
    prepare: (v) => isJsonObject(v) ? v : SKIP,
    write(w, tag, v: JsonObject) {
      w.uint32(tag).fork();
      sub.encode(w, v);
      w.ldelim();
    },
    read(r, limit) {
      const out: JsonObject = {};
      sub.decodeInto(r, subEnd(r, limit), out);
      return out;
    },
  };
}

/**
 * Compiles one field's writer. It receives the field's value (never
 * `undefined` or `null`), or the whole parent object for an inline struct.
 */
function compileFieldEncoder(field: FieldPlan): (w: Writer, v: JsonValue) => void {
  const tag = (field.id << 3) | WIRE_LEN;
  if (field.inline) {
    const sub = compileMessage(field.value.message!);
    // Embedded Go structs are not pointers: Go always writes them (and
    // EphemeralContainerCommon is required), so do we.
    return (w, obj) => {
      w.uint32(tag).fork();
      sub.encode(w, obj as JsonObject);
      w.ldelim();
    };
  }
  const codec = valueCodec(field);
  if (field.map) {
    return (w, map) => {
      if (!isJsonObject(map)) return;
      const keys = Object.keys(map);
      if (keys.length > 1) keys.sort(compareUtf8);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const v = map[k];
        if (v === undefined || v === null) continue;
        const prepared = codec.prepare(v);
        if (prepared === SKIP) continue;
        w.uint32(tag).fork().uint32(10).string(k);
        codec.write(w, 18, prepared as never);
        w.ldelim();
      }
    };
  }
  const valueTag = (field.id << 3) | codec.wireType;
  if (field.repeated) {
    return (w, list) => {
      if (!Array.isArray(list)) return;
      for (let i = 0; i < list.length; i++) {
        const v = list[i];
        if (v === null || v === undefined) continue;
        const prepared = codec.prepare(v);
        if (prepared !== SKIP) codec.write(w, valueTag, prepared as never);
      }
    };
  }
  if (field.value.kind === "message") {
    // The common case, without the codec's indirections.
    const sub = compileMessage(field.value.message!);
    return (w, v) => {
      if (!isJsonObject(v)) return;
      w.uint32(valueTag).fork();
      sub.encode(w, v);
      w.ldelim();
    };
  }
  if (field.value.kind === "string") {
    return (w, v) => {
      if (typeof v === "string") w.uint32(valueTag).string(v);
    };
  }
  return (w, v) => {
    const prepared = codec.prepare(v);
    if (prepared !== SKIP) codec.write(w, valueTag, prepared as never);
  };
}

function compileFieldDecoder(
  owner: string,
  field: FieldPlan,
): (r: Reader, wt: number, end: number, out: JsonObject) => void {
  const key = field.key;
  const where = `${owner}.${key}`;
  if (field.inline) {
    const sub = compileMessage(field.value.message!);
    return (r, wt, end, out) => {
      expectWire(wt, WIRE_LEN, where);
      sub.decodeInto(r, subEnd(r, end), out);
    };
  }
  const codec = valueCodec(field);
  if (field.map) {
    const fallback: JsonValue = field.value.kind === "quantity"
      ? "0"
      : field.value.kind === "message"
      ? {}
      : "";
    return (r, wt, end, out) => {
      expectWire(wt, WIRE_LEN, where);
      const entryEnd = subEnd(r, end);
      let k = "";
      let v: JsonValue | undefined;
      readFields(r, entryEnd, (id, ewt) => {
        if (id === 1) {
          expectWire(ewt, WIRE_LEN, `${where} key`);
          k = r.string();
        } else if (id === 2) {
          expectWire(ewt, codec.wireType, `${where} value`);
          v = codec.read(r, entryEnd);
        } else return false;
        return true;
      });
      let map = out[key];
      if (!isJsonObject(map)) out[key] = map = {};
      map[k] = v ?? fallback;
    };
  }
  const packable = codec.wireType === WIRE_VARINT;
  if (field.repeated) {
    return (r, wt, end, out) => {
      let list = out[key];
      if (!Array.isArray(list)) out[key] = list = [];
      if (packable && wt === WIRE_LEN) {
        const packedEnd = subEnd(r, end);
        while (r.pos < packedEnd) list.push(codec.read(r, packedEnd));
        if (r.pos !== packedEnd) throw new TypeError(`Cannot decode pod: "${where}" is truncated`);
        return;
      }
      expectWire(wt, codec.wireType, where);
      list.push(codec.read(r, end));
    };
  }
  if (field.value.kind === "message") {
    const sub = compileMessage(field.value.message!);
    return (r, wt, end, out) => {
      expectWire(wt, WIRE_LEN, where);
      // A repeated occurrence of a singular message merges into the first.
      let target = out[key];
      if (!isJsonObject(target)) out[key] = target = {};
      sub.decodeInto(r, subEnd(r, end), target);
    };
  }
  return (r, wt, end, out) => {
    expectWire(wt, codec.wireType, where);
    out[key] = codec.read(r, end);
  };
}

let podCodec: CompiledMessage | undefined;

/** The writer every {@linkcode encodePod} call uses (encoding is synchronous). */
const WRITER = new Writer();

function podMessage(): CompiledMessage {
  return podCodec ??= compileMessage(messagePlan(POD_TYPE_NAME));
}

function podLabel(pod: Readonly<PodObject>): string {
  const meta = isJsonObject(pod.metadata) ? pod.metadata : undefined;
  const name = typeof meta?.name === "string" ? meta.name : "";
  const namespace = typeof meta?.namespace === "string" ? meta.namespace : "";
  return namespace === "" ? name : `${namespace}/${name}`;
}

/**
 * Encodes a pod into the Kubernetes protobuf form of `v1.Pod` (no `k8s\0`
 * envelope, no TypeMeta). Deterministic: equal pods, whatever their key
 * order, give equal bytes. Values the schema cannot carry are left out; list
 * them with {@linkcode unrepresentablePaths}.
 *
 * @example
 * ```ts
 * const bytes = encodePod({ metadata: { uid: "u1", name: "web", namespace: "default" } });
 * ```
 *
 * @param pod The pod in its Kubernetes JSON shape.
 * @returns The serialized pod.
 * @throws {InvalidQuantityError} When a resource quantity is not valid (Go would reject the pod).
 */
export function encodePod(pod: Readonly<PodObject>): Uint8Array {
  // One writer, reused: its buffer grows to the largest pod once instead of
  // being allocated and grown for every pod; finish() copies the result out.
  const w = WRITER;
  w.reset();
  try {
    podMessage().encode(w, pod as JsonObject);
  } catch (error) {
    w.reset();
    if (!(error instanceof BadQuantity)) throw error;
    const issue = findIssues(pod).find((i) => i.quantity !== undefined);
    const path = issue?.path ?? "";
    const quantity = issue?.quantity ?? error.message;
    throw new InvalidQuantityError(
      `Cannot encode pod "${podLabel(pod)}": invalid quantity "${quantity}" at ${path}`,
      { path, quantity },
    );
  }
  return w.finish();
}

/**
 * Decodes Kubernetes protobuf `v1.Pod` bytes into the pod's JSON shape
 * (inline structs flattened, times as RFC 3339 strings, quantities as
 * strings). Only fields present on the wire appear; unknown fields are
 * skipped.
 *
 * @example
 * ```ts
 * const pod = decodePod(encodePod({ metadata: { uid: "u1", name: "web", namespace: "default" } }));
 * ```
 *
 * @param bytes A serialized `v1.Pod`.
 * @returns The pod.
 * @throws {TypeError} When the bytes are not a well-formed `v1.Pod`.
 * @throws {RangeError} When a quantity in it is not valid.
 */
export function decodePod(bytes: Uint8Array): PodObject {
  const out: JsonObject = {};
  try {
    podMessage().decodeInto(new protobuf.Reader(bytes), bytes.length, out);
  } catch (error) {
    if (
      error instanceof TypeError ||
      (error instanceof RangeError && error.message.startsWith("Cannot decode"))
    ) {
      throw error;
    }
    const detail = error instanceof Error ? error.message : String(error);
    throw new TypeError(`Cannot decode pod: malformed protobuf (${detail})`, { cause: error });
  }
  // The wire form carries no TypeMeta; the JSON shape of a pod is the same without it.
  return out as PodObject;
}

/** One value of a pod the schema cannot carry. */
interface Issue {
  readonly path: string;
  /** Set when the value is an invalid quantity. */
  readonly quantity?: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function fieldPath(base: string, key: string): string {
  if (!IDENT.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === "" ? key : `${base}.${key}`;
}

function checkValue(
  kind: ValueKind,
  plan: MessagePlan | undefined,
  v: JsonValue,
  path: string,
  issues: Issue[],
): void {
  if (kind === "message") {
    if (isJsonObject(v)) collectIssues(plan!, v, path, issues);
    else issues.push({ path });
    return;
  }
  if (kind === "quantity") {
    if (quantityText(v) === undefined) issues.push({ path, quantity: String(v) });
    return;
  }
  if (SCALAR_CODECS[kind].prepare(v) === SKIP) issues.push({ path });
}

function collectIssues(plan: MessagePlan, obj: JsonObject, path: string, issues: Issue[]): void {
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v === undefined || v === null) continue;
    const p = fieldPath(path, key);
    const field = plan.byKey.get(key);
    if (field === undefined) {
      // TypeMeta of a pod is implied by the message type.
      const typeMeta = path === "" && plan.name === POD_TYPE_NAME &&
        ((key === "apiVersion" && v === "v1") || (key === "kind" && v === "Pod"));
      if (!typeMeta) issues.push({ path: p });
      continue;
    }
    const { kind, message } = field.value;
    if (field.map) {
      if (!isJsonObject(v)) {
        issues.push({ path: p });
        continue;
      }
      for (const k of Object.keys(v)) {
        const entry = v[k];
        if (entry === undefined) continue;
        const ep = `${p}[${JSON.stringify(k)}]`;
        if (entry === null) issues.push({ path: ep });
        else checkValue(kind, message, entry, ep, issues);
      }
    } else if (field.repeated) {
      if (!Array.isArray(v)) {
        issues.push({ path: p });
        continue;
      }
      v.forEach((element, i) => {
        if (element === null) issues.push({ path: `${p}[${i}]` });
        else checkValue(kind, message, element, `${p}[${i}]`, issues);
      });
    } else {
      checkValue(kind, message, v, p, issues);
    }
  }
}

function findIssues(pod: Readonly<PodObject>): Issue[] {
  const issues: Issue[] = [];
  if (isJsonObject(pod)) collectIssues(messagePlan(POD_TYPE_NAME), pod, "", issues);
  return issues;
}

/**
 * Lists the JSON paths of values in a pod that the protobuf schema cannot
 * carry: unknown fields, values of the wrong type, invalid times, invalid
 * quantities. {@linkcode encodePod} leaves such values out (and throws for an
 * invalid quantity), so a source can log and count them instead of losing
 * them silently. `null` values mean "absent" in Kubernetes JSON and are not
 * reported; `apiVersion: "v1"` and `kind: "Pod"` are implied by the type.
 *
 * @example
 * ```ts
 * unrepresentablePaths({ metadata: { uid: "u", name: "n", namespace: "d" }, spec: { bogus: 1 } });
 * // → ["spec.bogus"]
 * ```
 *
 * @param pod The pod in its Kubernetes JSON shape.
 * @returns Paths such as `spec.containers[0].resources.limits["cpu"]`; empty when all is carried.
 */
export function unrepresentablePaths(pod: Readonly<PodObject>): string[] {
  return findIssues(pod).map((issue) => issue.path);
}
