/**
 * Hand-written encoding of the `podsapi.v1.PodQuery` messages
 * (`proto/podsapi/v1/pod_query.proto`) around pre-encoded pod bytes: the
 * server decodes requests strictly and frames responses without
 * re-encoding a pod. Clients (tests, benchmarks, the CLI) use the other
 * direction.
 *
 * @module
 */

import { decodeFieldMaskBinary, encodeFieldMaskBinary } from "./field_mask_bin.ts";
import { MessageWriter, readBool, readMessage, readString } from "./message_writer.ts";
import { decodePodResourcesMessage, type PodResourcesMessage } from "./pod_query_resources_wire.ts";
import {
  expect,
  lenFieldSize,
  WIRE_VARINT,
  type WireField,
  WireReader,
  writeLenField,
} from "./wire.ts";

/** `podsapi.v1.EventType` values. */
export const QUERY_EVENT_TYPE = {
  UNSPECIFIED: 0,
  ADDED: 1,
  MODIFIED: 2,
  DELETED: 3,
  INITIAL_SYNC_COMPLETE: 4,
  BOOKMARK: 5,
} as const;

/** One of {@linkcode QUERY_EVENT_TYPE}. */
export type QueryEventType = typeof QUERY_EVENT_TYPE[keyof typeof QUERY_EVENT_TYPE];

/** `podsapi.v1.Selector`. */
export interface SelectorMessage {
  namespace: string;
  labelSelector: string;
  fieldSelector: string;
  /** Only pods holding this resource (podresources). */
  resourceName: string;
  /** Only pods holding this device. */
  deviceId: string;
}

/** `podsapi.v1.ListRequest`; `mask` is `undefined` when the field is absent. */
export interface ListRequestMessage {
  selector: SelectorMessage;
  mask: readonly string[] | undefined;
  includeResources: boolean;
}

/** The `key` oneof of `podsapi.v1.GetRequest`. */
export type GetKeyMessage =
  | { readonly kind: "uid"; readonly uid: string }
  | { readonly kind: "name"; readonly namespace: string; readonly name: string }
  | { readonly kind: "containerId"; readonly id: string }
  | { readonly kind: "podIp"; readonly ip: string }
  | { readonly kind: "deviceId"; readonly id: string }
  /** A process: the pod of the container it runs in (host PID namespace). */
  | { readonly kind: "pid"; readonly pid: number }
  /** The inode of a container's cgroup v2 directory. */
  | { readonly kind: "cgroupId"; readonly cgroupId: number }
  | { readonly kind: "cgroupPath"; readonly path: string }
  /** A mount namespace inode. */
  | { readonly kind: "mntns"; readonly inode: number };

/** `podsapi.v1.ProcessContainer`: the container a process lookup found. */
export interface ProcessContainerMessage {
  name: string;
  /** With the runtime's scheme (`containerd://ID`). */
  containerId: string;
  init: boolean;
  ephemeral: boolean;
  initPid: number;
  cgroupPath: string;
  cgroupId: number;
  mntnsInode: number;
}

/** `podsapi.v1.GetRequest`. */
export interface GetRequestMessage {
  /** `undefined` when no key was set. */
  key: GetKeyMessage | undefined;
  mask: readonly string[] | undefined;
  includeDeleted: boolean;
  includeResources: boolean;
}

/** `podsapi.v1.WatchRequest`. */
export interface WatchRequestMessage {
  selector: SelectorMessage;
  mask: readonly string[] | undefined;
  resumeToken: string;
  bookmarkSeconds: number;
  includeResources: boolean;
}

/** A decoded `podsapi.v1.ListResponse`. */
export interface ListResponseMessage {
  pods: Uint8Array[];
  resumeToken: string;
  /** What the listed pods hold (those holding something). */
  resources: PodResourcesMessage[];
}

/** A decoded `podsapi.v1.GetResponse`. */
export interface GetResponseMessage {
  pod: Uint8Array;
  resumeToken: string;
  deleted: boolean;
  /** What the pod holds, when asked for (or found by a device). */
  resources: PodResourcesMessage | undefined;
  /** A device lookup: the containers holding the device. */
  deviceContainers: string[];
  /** A process lookup: the container the process is in. */
  container: ProcessContainerMessage | undefined;
}

/** A decoded `podsapi.v1.WatchEvent`. */
export interface WatchEventMessage {
  type: QueryEventType;
  pod: Uint8Array | undefined;
  resumeToken: string;
  /** What the pod holds, for a watch that asked. */
  resources: PodResourcesMessage | undefined;
}

const ENCODER = new TextEncoder();

function decodeSelector(bytes: Uint8Array, into: SelectorMessage): void {
  const reader = new WireReader(bytes, "Selector");
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) into.namespace = readString(reader, f, "namespace");
    else if (f.field === 2) into.labelSelector = readString(reader, f, "label_selector");
    else if (f.field === 3) into.fieldSelector = readString(reader, f, "field_selector");
    else if (f.field === 4) into.resourceName = readString(reader, f, "resource_name");
    else if (f.field === 5) into.deviceId = readString(reader, f, "device_id");
  }
}

function decodeMask(reader: WireReader, f: WireField, previous: readonly string[] | undefined) {
  const bytes = readMessage(reader, f, "mask");
  let paths: string[];
  try {
    paths = decodeFieldMaskBinary(bytes);
  } catch (err) {
    return reader.fail((err as Error).message);
  }
  // A repeated singular message field merges: repeated `paths` concatenate.
  return previous === undefined ? paths : [...previous, ...paths];
}

function emptySelector(): SelectorMessage {
  return { namespace: "", labelSelector: "", fieldSelector: "", resourceName: "", deviceId: "" };
}

/**
 * Decodes `ListRequest` strictly (unknown fields skipped, as protobuf does).
 *
 * @param bytes The serialized request.
 * @returns The request.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListRequest(bytes: Uint8Array): ListRequestMessage {
  const reader = new WireReader(bytes, "ListRequest");
  const out: ListRequestMessage = {
    selector: emptySelector(),
    mask: undefined,
    includeResources: false,
  };
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) decodeSelector(readMessage(reader, f, "selector"), out.selector);
    else if (f.field === 2) out.mask = decodeMask(reader, f, out.mask);
    else if (f.field === 3) out.includeResources = readBool(reader, f, "include_resources");
  }
  return out;
}

/**
 * Decodes `GetRequest`; of the `key` oneof the last one on the wire wins.
 *
 * @param bytes The serialized request.
 * @returns The request.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetRequest(bytes: Uint8Array): GetRequestMessage {
  const reader = new WireReader(bytes, "GetRequest");
  const out: GetRequestMessage = {
    key: undefined,
    mask: undefined,
    includeDeleted: false,
    includeResources: false,
  };
  while (!reader.done) {
    const f = reader.next();
    switch (f.field) {
      case 1:
        out.key = { kind: "uid", uid: readString(reader, f, "uid") };
        break;
      case 2: {
        const name = new WireReader(readMessage(reader, f, "name"), "NamespacedName");
        let namespace = "";
        let podName = "";
        while (!name.done) {
          const g = name.next();
          if (g.field === 1) namespace = readString(name, g, "namespace");
          else if (g.field === 2) podName = readString(name, g, "name");
        }
        out.key = { kind: "name", namespace, name: podName };
        break;
      }
      case 3:
        out.key = { kind: "containerId", id: readString(reader, f, "container_id") };
        break;
      case 4:
        out.key = { kind: "podIp", ip: readString(reader, f, "pod_ip") };
        break;
      case 5:
        out.mask = decodeMask(reader, f, out.mask);
        break;
      case 6:
        out.includeDeleted = readBool(reader, f, "include_deleted");
        break;
      case 7:
        out.key = { kind: "deviceId", id: readString(reader, f, "device_id") };
        break;
      case 8:
        out.includeResources = readBool(reader, f, "include_resources");
        break;
      case 9:
        out.key = { kind: "pid", pid: int64Of(reader, f, "host_pid") };
        break;
      case 10:
        expect(reader, f, WIRE_VARINT, "cgroup_id");
        out.key = { kind: "cgroupId", cgroupId: f.varint };
        break;
      case 11:
        out.key = { kind: "cgroupPath", path: readString(reader, f, "cgroup_path") };
        break;
      case 12:
        expect(reader, f, WIRE_VARINT, "mntns_inode");
        out.key = { kind: "mntns", inode: f.varint };
        break;
    }
  }
  return out;
}

/**
 * An `int64` varint as a number. A negative value (two's complement, ten
 * bytes) comes back negative, but not exact: the reader's doubles keep 53
 * bits, so small magnitudes read as -1.
 */
function int64Of(reader: WireReader, f: WireField, name: string): number {
  expect(reader, f, WIRE_VARINT, name);
  return f.varint >= 2 ** 63 ? Math.min(-1, f.varint - 2 ** 64) : f.varint;
}

/**
 * Decodes `WatchRequest`.
 *
 * @param bytes The serialized request.
 * @returns The request.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeWatchRequest(bytes: Uint8Array): WatchRequestMessage {
  const reader = new WireReader(bytes, "WatchRequest");
  const out: WatchRequestMessage = {
    selector: emptySelector(),
    mask: undefined,
    resumeToken: "",
    bookmarkSeconds: 0,
    includeResources: false,
  };
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) decodeSelector(readMessage(reader, f, "selector"), out.selector);
    else if (f.field === 2) out.mask = decodeMask(reader, f, out.mask);
    else if (f.field === 3) out.resumeToken = readString(reader, f, "resume_token");
    else if (f.field === 4) {
      expect(reader, f, WIRE_VARINT, "bookmark_seconds");
      // uint32: the low 32 bits, as protobuf truncates a wider varint.
      out.bookmarkSeconds = f.varint % 2 ** 32;
    } else if (f.field === 5) out.includeResources = readBool(reader, f, "include_resources");
  }
  return out;
}

// ---- encoding -------------------------------------------------------------

/**
 * Frames `ListResponse { repeated bytes pods = 1; string resume_token = 2;
 * repeated PodResources resources = 3 }`.
 *
 * @param pods Each pod's serialized `v1.Pod`, in order.
 * @param resumeToken The position of the list.
 * @param resources Serialized `PodResources`, for a request that asked.
 * @returns The serialized response.
 */
export function encodeListResponse(
  pods: readonly Uint8Array[],
  resumeToken: string | Uint8Array,
  resources: readonly Uint8Array[] = [],
): Uint8Array {
  const token = typeof resumeToken === "string" ? ENCODER.encode(resumeToken) : resumeToken;
  let size = token.length > 0 ? lenFieldSize(2, token) : 0;
  for (const pod of pods) size += lenFieldSize(1, pod);
  for (const r of resources) size += lenFieldSize(3, r);
  const buf = new Uint8Array(size);
  let pos = 0;
  for (const pod of pods) pos = writeLenField(buf, pos, 1, pod);
  if (token.length > 0) pos = writeLenField(buf, pos, 2, token);
  for (const r of resources) pos = writeLenField(buf, pos, 3, r);
  return buf;
}

/**
 * Frames `GetResponse { bytes pod = 1; string resume_token = 2; bool deleted = 3 }`.
 *
 * @param pod The serialized `v1.Pod`.
 * @param resumeToken The position the answer holds at (text, or its UTF-8 bytes).
 * @param deleted Whether `pod` is a tombstone.
 * @param extra What the pod holds (serialized `PodResources`) and, for a
 *   device lookup, the containers holding the device.
 * @returns The serialized response.
 */
export function encodeGetResponse(
  pod: Uint8Array,
  resumeToken: string | Uint8Array,
  deleted: boolean,
  extra?: {
    resources?: Uint8Array | undefined;
    deviceContainers?: readonly string[];
    container?: ProcessContainerMessage;
  },
): Uint8Array {
  if (extra !== undefined) {
    // Appended fields: the message is the same with or without them in front.
    const base = encodeGetResponse(pod, resumeToken, deleted);
    const tail = new MessageWriter()
      .message(4, extra.resources)
      .strings(5, extra.deviceContainers ?? [])
      .message(
        6,
        extra.container === undefined ? undefined : encodeProcessContainer(extra.container),
      )
      .finish();
    const out = new Uint8Array(base.length + tail.length);
    out.set(base);
    out.set(tail, base.length);
    return out;
  }
  // Written directly (no field list): Get is the hottest unary call.
  const token = typeof resumeToken === "string" ? ENCODER.encode(resumeToken) : resumeToken;
  const size = (pod.length > 0 ? lenFieldSize(1, pod) : 0) +
    (token.length > 0 ? lenFieldSize(2, token) : 0) + (deleted ? 2 : 0);
  const buf = new Uint8Array(size);
  let pos = 0;
  if (pod.length > 0) pos = writeLenField(buf, pos, 1, pod);
  if (token.length > 0) pos = writeLenField(buf, pos, 2, token);
  if (deleted) {
    buf[pos++] = (3 << 3) | WIRE_VARINT;
    buf[pos] = 1;
  }
  return buf;
}

/**
 * Frames `WatchEvent { EventType type = 1; bytes pod = 2; string resume_token = 3 }`.
 *
 * @param type The event type.
 * @param pod The serialized `v1.Pod` (absent for INITIAL_SYNC_COMPLETE and BOOKMARK).
 * @param resumeToken Resume from here for the changes after this event ("" for none).
 * @param resources What the pod holds (serialized `PodResources`), for a watch that asked.
 * @returns The serialized event.
 */
export function encodeWatchEvent(
  type: QueryEventType,
  pod: Uint8Array | undefined,
  resumeToken: string,
  resources?: Uint8Array,
): Uint8Array {
  return new MessageWriter().varint(1, type).bytes(2, pod).string(3, resumeToken)
    .message(4, resources).finish();
}

function encodeProcessContainer(c: ProcessContainerMessage): Uint8Array {
  return new MessageWriter()
    .string(1, c.name)
    .string(2, c.containerId)
    .bool(3, c.init)
    .bool(4, c.ephemeral)
    .varint(5, c.initPid)
    .string(6, c.cgroupPath)
    .varint(7, c.cgroupId)
    .varint(8, c.mntnsInode)
    .finish();
}

/** A `ProcessContainer` with every field at its default (what an absent message decodes to). */
export const EMPTY_PROCESS_CONTAINER: Readonly<ProcessContainerMessage> = Object.freeze({
  name: "",
  containerId: "",
  init: false,
  ephemeral: false,
  initPid: 0,
  cgroupPath: "",
  cgroupId: 0,
  mntnsInode: 0,
});

function decodeProcessContainer(bytes: Uint8Array): ProcessContainerMessage {
  const reader = new WireReader(bytes, "ProcessContainer");
  const out: ProcessContainerMessage = { ...EMPTY_PROCESS_CONTAINER };
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) out.name = readString(reader, f, "name");
    else if (f.field === 2) out.containerId = readString(reader, f, "container_id");
    else if (f.field === 3) out.init = readBool(reader, f, "init");
    else if (f.field === 4) out.ephemeral = readBool(reader, f, "ephemeral");
    else if (f.field === 5) out.initPid = int64Of(reader, f, "init_pid");
    else if (f.field === 6) out.cgroupPath = readString(reader, f, "cgroup_path");
    else if (f.field === 7) {
      expect(reader, f, WIRE_VARINT, "cgroup_id");
      out.cgroupId = f.varint;
    } else if (f.field === 8) {
      expect(reader, f, WIRE_VARINT, "mntns_inode");
      out.mntnsInode = f.varint;
    }
  }
  return out;
}

function encodeSelector(selector: Partial<SelectorMessage> | undefined): Uint8Array | undefined {
  if (selector === undefined) return undefined;
  return new MessageWriter()
    .string(1, selector.namespace ?? "")
    .string(2, selector.labelSelector ?? "")
    .string(3, selector.fieldSelector ?? "")
    .string(4, selector.resourceName ?? "")
    .string(5, selector.deviceId ?? "")
    .finish();
}

function encodeMask(mask: readonly string[] | undefined): Uint8Array | undefined {
  return mask === undefined ? undefined : encodeFieldMaskBinary(mask);
}

/**
 * Frames a `ListRequest` (clients).
 *
 * @param request Selector and mask paths.
 * @returns The serialized request.
 */
export function encodeListRequest(
  request: {
    selector?: Partial<SelectorMessage>;
    mask?: readonly string[];
    includeResources?: boolean;
  } = {},
): Uint8Array {
  return new MessageWriter()
    .message(1, encodeSelector(request.selector))
    .message(2, encodeMask(request.mask))
    .bool(3, request.includeResources ?? false)
    .finish();
}

/**
 * Frames a `GetRequest` (clients).
 *
 * @param request Key, mask paths and whether tombstones count.
 * @returns The serialized request.
 */
export function encodeGetRequest(
  request: {
    key: GetKeyMessage;
    mask?: readonly string[];
    includeDeleted?: boolean;
    includeResources?: boolean;
  },
): Uint8Array {
  const w = new MessageWriter();
  const key = request.key;
  switch (key.kind) {
    case "uid":
      w.message(1, ENCODER.encode(key.uid));
      break;
    case "name":
      w.message(2, new MessageWriter().string(1, key.namespace).string(2, key.name).finish());
      break;
    case "containerId":
      w.message(3, ENCODER.encode(key.id));
      break;
    case "podIp":
      w.message(4, ENCODER.encode(key.ip));
      break;
    case "deviceId":
      w.presentString(7, key.id);
      break;
    case "pid":
      // Present even when 0 (a oneof member); negative as int64, for the server to refuse.
      w.presentVarint(9, key.pid);
      break;
    case "cgroupId":
      w.presentVarint(10, key.cgroupId);
      break;
    case "cgroupPath":
      w.presentString(11, key.path);
      break;
    case "mntns":
      w.presentVarint(12, key.inode);
      break;
  }
  return w.message(5, encodeMask(request.mask)).bool(6, request.includeDeleted ?? false)
    .bool(8, request.includeResources ?? false)
    .finish();
}

/**
 * Frames a `WatchRequest` (clients).
 *
 * @param request Selector, mask paths, resume token and bookmark period.
 * @returns The serialized request.
 */
export function encodeWatchRequest(
  request: {
    selector?: Partial<SelectorMessage>;
    mask?: readonly string[];
    resumeToken?: string;
    bookmarkSeconds?: number;
    includeResources?: boolean;
  } = {},
): Uint8Array {
  return new MessageWriter()
    .message(1, encodeSelector(request.selector))
    .message(2, encodeMask(request.mask))
    .string(3, request.resumeToken ?? "")
    .varint(4, request.bookmarkSeconds ?? 0)
    .bool(5, request.includeResources ?? false)
    .finish();
}

/**
 * Decodes a `ListResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns Pods (views into `bytes`) and the resume token.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListResponse(bytes: Uint8Array): ListResponseMessage {
  const reader = new WireReader(bytes, "ListResponse");
  const out: ListResponseMessage = { pods: [], resumeToken: "", resources: [] };
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) out.pods.push(readMessage(reader, f, "pods"));
    else if (f.field === 2) out.resumeToken = readString(reader, f, "resume_token");
    else if (f.field === 3) {
      out.resources.push(decodePodResourcesMessage(readMessage(reader, f, "resources")));
    }
  }
  return out;
}

/**
 * Decodes a `GetResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns The pod, resume token and tombstone flag.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetResponse(bytes: Uint8Array): GetResponseMessage {
  const reader = new WireReader(bytes, "GetResponse");
  const out: GetResponseMessage = {
    pod: new Uint8Array(0),
    resumeToken: "",
    deleted: false,
    resources: undefined,
    deviceContainers: [],
    container: undefined,
  };
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) out.pod = readMessage(reader, f, "pod");
    else if (f.field === 2) out.resumeToken = readString(reader, f, "resume_token");
    else if (f.field === 3) out.deleted = readBool(reader, f, "deleted");
    else if (f.field === 4) {
      out.resources = decodePodResourcesMessage(readMessage(reader, f, "resources"));
    } else if (f.field === 5) out.deviceContainers.push(readString(reader, f, "device_containers"));
    else if (f.field === 6) {
      out.container = decodeProcessContainer(readMessage(reader, f, "container"));
    }
  }
  return out;
}

const EVENT_TYPES: ReadonlySet<number> = new Set(Object.values(QUERY_EVENT_TYPE));

/**
 * Decodes a `WatchEvent` (clients).
 *
 * @param bytes The serialized event.
 * @returns Type, pod and resume token.
 * @throws {TypeError} When the bytes are malformed or the type unknown.
 */
export function decodeWatchEvent(bytes: Uint8Array): WatchEventMessage {
  const reader = new WireReader(bytes, "WatchEvent");
  let type = 0;
  let pod: Uint8Array | undefined;
  let resumeToken = "";
  let resources: PodResourcesMessage | undefined;
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) {
      expect(reader, f, WIRE_VARINT, "type");
      type = f.varint;
    } else if (f.field === 2) pod = readMessage(reader, f, "pod");
    else if (f.field === 3) resumeToken = readString(reader, f, "resume_token");
    else if (f.field === 4) {
      resources = decodePodResourcesMessage(readMessage(reader, f, "resources"));
    }
  }
  if (!EVENT_TYPES.has(type)) reader.fail(`unknown event type "${type}"`);
  return { type: type as QueryEventType, pod, resumeToken, resources };
}
