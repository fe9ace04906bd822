/**
 * How each kind of value of a `v1.Pod` is checked, written and read:
 * strings, numbers, booleans, bytes, times, quantities, `IntOrString`,
 * `FieldsV1`. Shared by the pod codec (which writes and reads them) and the
 * pod checker (which lists what they cannot carry).
 *
 * @module
 */

import { canonicalJson, type JsonValue } from "../model/json.ts";
import { isInt32, isInt64, parseRfc3339, quantityText, type Timestamp } from "./_k8s_values.ts";
import type { ValueKind } from "./_pod_plan.ts";
import { formatRfc3339 } from "../model/rfc3339.ts";
import type { Writer } from "./writer.ts";
import { WIRE_TYPE } from "./wire.ts";
import type { ProtoReader } from "./proto_reader.ts";

/** Internal signal from deep inside the walker; encodePod adds the path. */
export class BadQuantity extends Error {}

const WIRE_VARINT = WIRE_TYPE.varint;
const WIRE_LEN = WIRE_TYPE.lengthDelimited;

/** The reader the decoder walks. */
export type Reader = ProtoReader;

/** How one value kind is checked, written and read. */
export interface ValueCodec {
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
export const SKIP: unique symbol = Symbol("skip");

function stringOrSkip(v: JsonValue): string | typeof SKIP {
  return typeof v === "string" ? v : SKIP;
}

/** Reads a length and returns where the sub-message ends, checked against `limit`. */
export function subEnd(r: Reader, limit: number): number {
  const len = r.uint32();
  const end = r.pos + len;
  if (end > limit) throw new TypeError("Cannot decode pod: a length runs past its message");
  return end;
}

/** Fails the decode unless a field has the wire type its schema gives. */
export function expectWire(actual: number, expected: number, where: string): void {
  if (actual !== expected) {
    throw new TypeError(
      `Cannot decode pod: field "${where}" has wire type ${actual}, expected ${expected}`,
    );
  }
}

/** Skips fields of a special message until its end, reading the known ones via `onField`. */
export function readFields(
  r: Reader,
  end: number,
  onField: (id: number, wireType: number) => boolean,
): void {
  while (r.pos < end) {
    const tag = r.uint32();
    if (!onField(tag >>> 3, tag & 7)) r.skipType(tag & 7, 0, tag >>> 3);
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

/** The codec of every value kind but `message`. */
export const SCALAR_CODECS: Readonly<Record<Exclude<ValueKind, "message">, ValueCodec>> = {
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
    read: (r) => r.int64(),
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
          type = r.int64();
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
      seconds = r.int64();
    } else if (id === 2) {
      expectWire(wt, WIRE_VARINT, "Time.nanos");
      nanos = r.int32();
    } else return false;
    return true;
  });
  return micro ? formatRfc3339(seconds, Math.floor(nanos / 1000)) : formatRfc3339(seconds);
}
