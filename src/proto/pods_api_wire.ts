/**
 * Hand-written framing of the Pods API messages around pre-encoded pod
 * bytes, so the server never re-encodes a pod. `ListPodsResponse`,
 * `GetPodResponse` and `PodWatchResponse` are byte-identical for both
 * services (`v1alpha1.Pods` carries `bytes`, `Pods` an embedded `v1.Pod`:
 * both are length-delimited field 1 or 2 on the wire).
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";
import { ProtoReader } from "./proto_reader.ts";
import { decodeUtf8, WIRE_TYPE } from "./wire.ts";
import { lenFieldSize, varintSize, writeLenField, writeVarint } from "./writer.ts";

const WIRE_VARINT = WIRE_TYPE.varint;
const WIRE_LEN = WIRE_TYPE.lengthDelimited;

/**
 * Reads each field of a message strictly: `read` takes the fields it knows
 * and returns false for the others, which are skipped.
 */
function readFields(
  bytes: Uint8Array,
  what: string,
  read: (r: ProtoReader, field: number, wireType: number) => boolean,
): void {
  const r = new ProtoReader(bytes, what);
  while (!r.done) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (!read(r, field, wireType)) r.skipType(wireType, 0, field);
  }
}

/** Fails the read unless a known field has the wire type its schema gives. */
function expectWireType(r: ProtoReader, f: number, wireType: number, want: number, name: string) {
  if (wireType === want) return;
  // Skipped first, so a malformed value is reported as such.
  r.skipType(wireType, 0, f);
  r.fail(`field "${name}" has wire type ${wireType}, expected ${want}`);
}

/** `v1alpha1.EventType` values (DESIGN.md §3.1). */
export const WATCH_EVENT_TYPE = {
  UNSPECIFIED: 0,
  ADDED: 1,
  MODIFIED: 2,
  DELETED: 3,
  INITIAL_SYNC_COMPLETE: 4,
} as const;

/** One of {@linkcode WATCH_EVENT_TYPE}. */
export type WatchEventType = typeof WATCH_EVENT_TYPE[keyof typeof WATCH_EVENT_TYPE];

/** A decoded `v1alpha1.WatchPodsEvent`. */
export interface WatchPodsEvent {
  readonly type: WatchEventType;
  /** The serialized `v1.Pod`; absent for INITIAL_SYNC_COMPLETE. */
  readonly pod: Uint8Array | undefined;
}

function singleLenField(field: number, payload: Uint8Array): Uint8Array {
  const buf = new Uint8Array(lenFieldSize(field, payload));
  writeLenField(buf, 0, field, payload);
  return buf;
}

/**
 * Frames `ListPodsResponse { repeated bytes pods = 1 }` (and
 * `PodListResponse { repeated v1.Pod pods = 1 }`: the same bytes).
 *
 * @example
 * ```ts
 * const body = encodeListPodsResponse([encodePod(pod)]);
 * ```
 *
 * @param pods Each pod's serialized `v1.Pod`, in response order.
 * @returns The serialized response.
 */
export function encodeListPodsResponse(pods: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const pod of pods) size += lenFieldSize(1, pod);
  const buf = new Uint8Array(size);
  let pos = 0;
  for (const pod of pods) pos = writeLenField(buf, pos, 1, pod);
  return buf;
}

/**
 * The bytes of `GetPodResponse { bytes pod = 1 }` (and `PodGetResponse`)
 * before its pod: written before the pod's own bytes they make the whole
 * response, so the server sends a cached pod without copying it.
 *
 * @param pod The serialized `v1.Pod`.
 * @returns The field's tag and length.
 */
export function getPodResponseHead(pod: Uint8Array): Uint8Array {
  return lenFieldHead(1, pod.length);
}

/**
 * The bytes of `PodWatchResponse { v1.Pod pod = 1 }` before its pod (see
 * {@linkcode getPodResponseHead}).
 *
 * @param pod The serialized `v1.Pod`.
 * @returns The field's tag and length.
 */
export function podWatchResponseHead(pod: Uint8Array): Uint8Array {
  return lenFieldHead(1, pod.length);
}

/**
 * The bytes of `v1alpha1.WatchPodsEvent { EventType type = 1; bytes pod = 2 }`
 * before its pod (see {@linkcode getPodResponseHead}): the type, then the
 * pod's tag and length. Default values are left out, as proto3 does.
 *
 * @param type The event type.
 * @param pod The serialized `v1.Pod`; left out for INITIAL_SYNC_COMPLETE.
 * @returns The event without the pod's bytes.
 */
export function watchPodsEventHead(type: WatchEventType, pod?: Uint8Array): Uint8Array {
  const podHead = pod !== undefined && pod.length > 0 ? lenFieldHead(2, pod.length) : NO_BYTES;
  if (type === 0) return podHead;
  const buf = new Uint8Array(2 + podHead.length);
  buf[0] = (1 << 3) | WIRE_VARINT;
  buf[1] = type;
  buf.set(podHead, 2);
  return buf;
}

/**
 * Frames `v1alpha1.WatchPodsEvent { EventType type = 1; bytes pod = 2 }`.
 * Default values are left out, as proto3 does.
 *
 * @example
 * ```ts
 * encodeWatchPodsEvent(WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE); // Uint8Array [8, 4]
 * ```
 *
 * @param type The event type.
 * @param pod The serialized `v1.Pod`; left out for INITIAL_SYNC_COMPLETE.
 * @returns The serialized event.
 */
export function encodeWatchPodsEvent(type: WatchEventType, pod?: Uint8Array): Uint8Array {
  const head = watchPodsEventHead(type, pod);
  return pod !== undefined && pod.length > 0 ? concatBytes([head, pod]) : head;
}

const NO_BYTES = new Uint8Array(0);

/** A length-delimited field's tag and length, without its payload. */
function lenFieldHead(field: number, length: number): Uint8Array {
  const tag = (field << 3) | WIRE_LEN;
  const buf = new Uint8Array(varintSize(tag) + varintSize(length));
  writeVarint(buf, writeVarint(buf, 0, tag), length);
  return buf;
}

/**
 * Frames `GetPodRequest { string podUID = 1 }` (and `PodGetRequest`).
 *
 * @param podUID The pod UID.
 * @returns The serialized request.
 */
export function encodeGetPodRequest(podUID: string): Uint8Array {
  if (podUID === "") return new Uint8Array(0);
  return singleLenField(1, new TextEncoder().encode(podUID));
}

/**
 * Decodes `GetPodRequest` / `PodGetRequest { string podUID = 1 }` strictly:
 * malformed protobuf or invalid UTF-8 throws; unknown fields are skipped
 * (protobuf allows them); a repeated `podUID` keeps the last, as protobuf does.
 *
 * @param bytes The serialized request.
 * @returns The requested UID (empty when absent).
 * @throws {TypeError} When the bytes are not a well-formed request.
 */
export function decodeGetPodRequest(bytes: Uint8Array): { podUID: string } {
  // What every client sends: field 1 alone, shorter than 128 bytes. Read in
  // place; anything else goes through the reader and its checks.
  if (bytes.byteLength >= 2 && bytes[0] === 0x0a && bytes[1]! < 0x80) {
    const length = bytes[1]!;
    if (bytes.byteLength === 2 + length) {
      try {
        return { podUID: decodeUtf8(bytes.subarray(2)) };
      } catch {
        // Invalid UTF-8: the reader says so.
      }
    }
  }
  let podUID = "";
  readFields(bytes, "GetPodRequest", (r, field, wireType) => {
    if (field !== 1) return false;
    expectWireType(r, field, wireType, WIRE_LEN, "podUID");
    const value = r.bytes();
    try {
      podUID = decodeUtf8(value);
    } catch {
      r.fail("podUID is not valid UTF-8");
    }
    return true;
  });
  return { podUID };
}

/**
 * Splits `ListPodsResponse` / `PodListResponse` into each pod's bytes.
 *
 * @param bytes The serialized response.
 * @returns Each serialized `v1.Pod` (views into `bytes`), in order.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListPodsResponse(bytes: Uint8Array): Uint8Array[] {
  const pods: Uint8Array[] = [];
  readFields(bytes, "ListPodsResponse", (r, field, wireType) => {
    if (field !== 1) return false;
    expectWireType(r, field, wireType, WIRE_LEN, "pods");
    pods.push(r.bytes());
    return true;
  });
  return pods;
}

function decodeSinglePod(bytes: Uint8Array, what: string): Uint8Array {
  let pod: Uint8Array | undefined;
  readFields(bytes, what, (r, field, wireType) => {
    if (field !== 1) return false;
    expectWireType(r, field, wireType, WIRE_LEN, "pod");
    // A repeated singular message field merges; concatenation is its merge.
    const value = r.bytes();
    pod = pod === undefined ? value : concatBytes([pod, value]);
    return true;
  });
  // Absent is the empty message (proto3 `bytes` default; an empty v1.Pod).
  return pod ?? new Uint8Array(0);
}

/**
 * Extracts the pod of `GetPodResponse` / `PodGetResponse`.
 *
 * @param bytes The serialized response.
 * @returns The serialized `v1.Pod` (empty when absent).
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetPodResponse(bytes: Uint8Array): Uint8Array {
  return decodeSinglePod(bytes, "GetPodResponse");
}

/**
 * Extracts the pod of `PodWatchResponse` (package-less service).
 *
 * @param bytes The serialized response.
 * @returns The serialized `v1.Pod` (empty when absent).
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodePodWatchResponse(bytes: Uint8Array): Uint8Array {
  return decodeSinglePod(bytes, "PodWatchResponse");
}

const EVENT_TYPES: ReadonlySet<number> = new Set(Object.values(WATCH_EVENT_TYPE));

/**
 * Decodes `v1alpha1.WatchPodsEvent`.
 *
 * @param bytes The serialized event.
 * @returns The event type and pod bytes.
 * @throws {TypeError} When the bytes are malformed or the event type is unknown.
 */
export function decodeWatchPodsEvent(bytes: Uint8Array): WatchPodsEvent {
  let type = 0;
  let pod: Uint8Array | undefined;
  readFields(bytes, "WatchPodsEvent", (r, field, wireType) => {
    if (field === 1) {
      expectWireType(r, field, wireType, WIRE_VARINT, "type");
      type = r.uint64();
    } else if (field === 2) {
      expectWireType(r, field, wireType, WIRE_LEN, "pod");
      pod = r.bytes();
    } else return false;
    return true;
  });
  if (!EVENT_TYPES.has(type)) {
    throw new TypeError(`Cannot decode WatchPodsEvent: unknown event type "${type}"`);
  }
  return { type: type as WatchEventType, pod };
}
