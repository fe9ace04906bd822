/**
 * Pod JSON ⇄ Kubernetes protobuf bytes (`k8s.io.api.core.v1.Pod`, as Go's
 * `pod.Marshal()` / `pod.Unmarshal()`), driven by the schema: a walker is
 * compiled once per message type from the schema's reflection (`schema.ts`),
 * writes with a `Writer` whose bytes match the reference writer's (tests)
 * (`writer.ts`) and reads with `proto_reader.ts`; the value kinds are
 * `_value_codecs.ts`', the check of what the schema cannot carry
 * `pod_checker.ts`'.
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

import { compareUtf8, isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import { Writer } from "./writer.ts";
import {
  BadQuantity,
  expectWire,
  type Reader,
  readFields,
  SCALAR_CODECS,
  SKIP,
  subEnd,
  type ValueCodec,
} from "./_value_codecs.ts";
import { findIssues } from "./pod_checker.ts";
import { WIRE_TYPE } from "./wire.ts";
import { ProtoReader } from "./proto_reader.ts";
import { type FieldPlan, type MessagePlan, messagePlan } from "./_pod_plan.ts";

const WIRE_VARINT = WIRE_TYPE.varint;
const WIRE_LEN = WIRE_TYPE.lengthDelimited;
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

/** A compiled message: writes a JSON object, reads into one. */
interface CompiledMessage {
  encode(w: Writer, obj: JsonObject): void;
  decodeInto(r: Reader, end: number, out: JsonObject): void;
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
        if (read === undefined) r.skipType(tag & 7, 0, id);
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
 * them with `unrepresentablePaths()` (pod_checker.ts).
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
    podMessage().decodeInto(new ProtoReader(bytes), bytes.length, out);
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
