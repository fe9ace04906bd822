/**
 * The `podsapi.v1.PodQuery` messages (`proto/podsapi/v1/pod_query.proto`) in
 * the shapes the server and the clients use. The codecs are compiled from
 * the generated descriptor (strict: requests are hostile input); this module
 * only maps between the generated message shapes and these. The server
 * frames answers around pre-encoded pods without re-encoding them.
 *
 * @module
 */

import type * as Wire from "./generated/pod_query_types.ts";
import type { MessageInit } from "./plain_codec.ts";
import { lenFieldSize, writeLenField } from "./writer.ts";
import { encodeFieldMaskBinary } from "./field_mask_bin.ts";
import {
  podQueryCodec,
  type PodResourcesMessage,
  podResourcesOf,
} from "./pod_query_resources_wire.ts";

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

/** `podsapi.v1.Selector` (`resourceName`, `deviceId`: only pods holding it). */
export type SelectorMessage = Wire.Selector;

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

/**
 * `podsapi.v1.ProcessContainer`: the container a process lookup found
 * (`containerId` with the runtime's scheme, `containerd://ID`).
 */
export type ProcessContainerMessage = Wire.ProcessContainer;

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

const LIST_REQUEST = podQueryCodec<Wire.ListRequest>("ListRequest");
const GET_REQUEST = podQueryCodec<Wire.GetRequest>("GetRequest");
const WATCH_REQUEST = podQueryCodec<Wire.WatchRequest>("WatchRequest");
const LIST_RESPONSE = podQueryCodec<Wire.ListResponse>("ListResponse");
const GET_RESPONSE = podQueryCodec<Wire.GetResponse>("GetResponse");
const WATCH_EVENT = podQueryCodec<Wire.WatchEvent>("WatchEvent");

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
  const m = LIST_REQUEST.decode(bytes);
  return {
    selector: m.selector ?? emptySelector(),
    mask: m.mask?.paths,
    includeResources: m.includeResources,
  };
}

function keyOf(m: Wire.GetRequest): GetKeyMessage | undefined {
  switch (m.key) {
    case "uid":
      return { kind: "uid", uid: m.uid };
    case "name":
      return { kind: "name", namespace: m.name?.namespace ?? "", name: m.name?.name ?? "" };
    case "containerId":
      return { kind: "containerId", id: m.containerId };
    case "podIp":
      return { kind: "podIp", ip: m.podIp };
    case "deviceId":
      return { kind: "deviceId", id: m.deviceId };
    case "hostPid":
      return { kind: "pid", pid: m.hostPid };
    case "cgroupId":
      return { kind: "cgroupId", cgroupId: m.cgroupId };
    case "cgroupPath":
      return { kind: "cgroupPath", path: m.cgroupPath };
    case "mntnsInode":
      return { kind: "mntns", inode: m.mntnsInode };
    case null:
      return undefined;
  }
}

/**
 * Decodes `GetRequest`; of the `key` oneof the last one on the wire wins.
 *
 * @param bytes The serialized request.
 * @returns The request.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetRequest(bytes: Uint8Array): GetRequestMessage {
  const m = GET_REQUEST.decode(bytes);
  return {
    key: keyOf(m),
    mask: m.mask?.paths,
    includeDeleted: m.includeDeleted,
    includeResources: m.includeResources,
  };
}

/**
 * Decodes `WatchRequest`.
 *
 * @param bytes The serialized request.
 * @returns The request.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeWatchRequest(bytes: Uint8Array): WatchRequestMessage {
  const m = WATCH_REQUEST.decode(bytes);
  return {
    selector: m.selector ?? emptySelector(),
    mask: m.mask?.paths,
    resumeToken: m.resumeToken,
    bookmarkSeconds: m.bookmarkSeconds,
    includeResources: m.includeResources,
  };
}

// ---- encoding -------------------------------------------------------------

/**
 * Frames `ListResponse { repeated bytes pods = 1; string resume_token = 2;
 * repeated PodResources resources = 3 }` into a buffer of the exact size:
 * the pods are copied once.
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
 * Frames `GetResponse`.
 *
 * @param pod The serialized `v1.Pod`.
 * @param resumeToken The position the answer holds at (text, or its UTF-8 bytes).
 * @param deleted Whether `pod` is a tombstone.
 * @param extra What the pod holds (serialized `PodResources`) and, for a
 *   device lookup, the containers holding the device; for a process lookup,
 *   its container.
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
    // Fields 4 to 6 follow 1 to 3: the answer is the plain one with them appended.
    const base = encodeGetResponse(pod, resumeToken, deleted);
    const tail = GET_RESPONSE.encode(extra);
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
    buf[pos++] = 3 << 3;
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
  return WATCH_EVENT.encode({ type, pod, resumeToken, resources });
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

/** A mask as its encoding: a path that is not well-formed UTF-16 is refused, not written. */
function maskOf(mask: readonly string[] | undefined): Uint8Array | undefined {
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
  return LIST_REQUEST.encode({ ...request, mask: maskOf(request.mask) });
}

function keyFields(key: GetKeyMessage): MessageInit<Wire.GetRequest> {
  switch (key.kind) {
    case "uid":
      return { uid: key.uid };
    case "name":
      return { name: { namespace: key.namespace, name: key.name } };
    case "containerId":
      return { containerId: key.id };
    case "podIp":
      return { podIp: key.ip };
    case "deviceId":
      return { deviceId: key.id };
    case "pid":
      // Negative as int64 writes it, for the server to refuse.
      return { hostPid: key.pid };
    case "cgroupId":
      return { cgroupId: key.cgroupId };
    case "cgroupPath":
      return { cgroupPath: key.path };
    case "mntns":
      return { mntnsInode: key.inode };
  }
}

/**
 * Frames a `GetRequest` (clients). The key is a oneof member: written even
 * at its default.
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
  return GET_REQUEST.encode({
    ...keyFields(request.key),
    mask: maskOf(request.mask),
    includeDeleted: request.includeDeleted,
    includeResources: request.includeResources,
  });
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
  return WATCH_REQUEST.encode({ ...request, mask: maskOf(request.mask) });
}

/**
 * Decodes a `ListResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns Pods (views into `bytes`) and the resume token.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListResponse(bytes: Uint8Array): ListResponseMessage {
  const m = LIST_RESPONSE.decode(bytes);
  return {
    pods: m.pods,
    resumeToken: m.resumeToken,
    resources: m.resources.map(podResourcesOf),
  };
}

/**
 * Decodes a `GetResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns The pod, resume token and tombstone flag.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetResponse(bytes: Uint8Array): GetResponseMessage {
  const m = GET_RESPONSE.decode(bytes);
  return {
    pod: m.pod,
    resumeToken: m.resumeToken,
    deleted: m.deleted,
    resources: m.resources === null ? undefined : podResourcesOf(m.resources),
    deviceContainers: m.deviceContainers,
    container: m.container ?? undefined,
  };
}

const EVENT_TYPES: ReadonlySet<number> = new Set(Object.values(QUERY_EVENT_TYPE));

function isEventType(type: number): type is QueryEventType {
  return EVENT_TYPES.has(type);
}

/**
 * Decodes a `WatchEvent` (clients).
 *
 * @param bytes The serialized event.
 * @returns Type, pod and resume token.
 * @throws {TypeError} When the bytes are malformed or the type unknown.
 */
export function decodeWatchEvent(bytes: Uint8Array): WatchEventMessage {
  const m = WATCH_EVENT.decode(bytes);
  const type = m.type;
  if (!isEventType(type)) {
    throw new TypeError(`Cannot decode WatchEvent: unknown event type "${type}"`);
  }
  return {
    type,
    // An empty pod is not written: absent and empty read the same.
    pod: m.pod.length === 0 ? undefined : m.pod,
    resumeToken: m.resumeToken,
    resources: m.resources === null ? undefined : podResourcesOf(m.resources),
  };
}
