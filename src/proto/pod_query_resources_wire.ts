/**
 * The messages `podsapi.v1.PodQuery` uses to say what pods hold
 * (`proto/podsapi/v1/pod_query.proto`: `PodResources` and what it contains,
 * `ListDevicesRequest`, `ListDevicesResponse`) in the model's shapes, and the
 * codec every PodQuery message is read and written with: compiled from the
 * generated descriptor, strict. The server writes these, clients (the CLI,
 * tests) read them back; this module only maps the generated shapes.
 *
 * @module
 */

import type { ContainerMemory, NodeDevice, PodResources } from "../model/pod_resources.ts";
import * as Wire from "./generated/pod_query_types.ts";
import { type TypedCodec, typedCodec } from "./plain_codec.ts";

/** `podsapi.v1.PodResources`: what one pod holds, with the pod's UID. */
export interface PodResourcesMessage extends PodResources {
  readonly uid: string;
}

/** `podsapi.v1.NodeDevice`. */
export type NodeDeviceMessage = NodeDevice;

/** `podsapi.v1.ListDevicesResponse`. */
export interface ListDevicesResponseMessage {
  readonly available: boolean;
  readonly message: string;
  readonly devices: readonly NodeDeviceMessage[];
  readonly cpuIds: readonly number[];
  readonly freeCpuIds: readonly number[];
  readonly memory: readonly ContainerMemory[];
  readonly resumeToken: string;
}

/**
 * The strict codec of one PodQuery message type.
 *
 * @typeParam T Its generated shape.
 * @param name The type's name inside `podsapi.v1`.
 * @returns The codec.
 */
export function podQueryCodec<T>(name: string): TypedCodec<T> {
  return typedCodec<T>(Wire.POD_QUERY_DESCRIPTOR, `podsapi.v1.${name}`, { strict: true });
}

const POD_RESOURCES = podQueryCodec<Wire.PodResources>("PodResources");
const LIST_DEVICES_REQUEST = podQueryCodec<Wire.ListDevicesRequest>("ListDevicesRequest");
const LIST_DEVICES_RESPONSE = podQueryCodec<Wire.ListDevicesResponse>("ListDevicesResponse");

/** The model's memory block as `MemoryBlock` spells it. */
function blockOf(
  m: ContainerMemory,
): { memoryType: string; sizeBytes: number; numaNodes: readonly number[] } {
  return { memoryType: m.memoryType, sizeBytes: m.size, numaNodes: m.numaNodes };
}

function memoryOf(m: Wire.MemoryBlock): ContainerMemory {
  return { memoryType: m.memoryType, size: m.sizeBytes, numaNodes: m.numaNodes };
}

/** Encodings already made, per allocation value (one allocation, many readers). */
const ENCODED = new WeakMap<PodResources, Map<string, Uint8Array>>();

/**
 * Encodes `podsapi.v1.PodResources`. An allocation value is encoded once
 * per UID and reused (they are immutable).
 *
 * @param uid The pod's UID.
 * @param resources What it holds.
 * @returns The serialized message.
 */
export function encodePodResourcesMessage(uid: string, resources: PodResources): Uint8Array {
  let byUid = ENCODED.get(resources);
  const known = byUid?.get(uid);
  if (known !== undefined) return known;
  const bytes = POD_RESOURCES.encode({
    ...resources,
    uid,
    containers: resources.containers.map((c) => ({ ...c, memory: c.memory.map(blockOf) })),
    memory: resources.memory.map(blockOf),
  });
  if (byUid === undefined) ENCODED.set(resources, byUid = new Map());
  byUid.set(uid, bytes);
  return bytes;
}

/**
 * Encodes `ListDevicesRequest { string resource_name = 1 }` (clients).
 *
 * @param resourceName Only this resource; empty: all.
 * @returns The serialized request.
 */
export function encodeListDevicesRequest(resourceName = ""): Uint8Array {
  return LIST_DEVICES_REQUEST.encode({ resourceName });
}

/**
 * Encodes a `ListDevicesResponse`.
 *
 * @param response The node's devices.
 * @returns The serialized response.
 */
export function encodeListDevicesResponse(response: ListDevicesResponseMessage): Uint8Array {
  return LIST_DEVICES_RESPONSE.encode({ ...response, memory: response.memory.map(blockOf) });
}

/**
 * Maps a decoded `podsapi.v1.PodResources` to the model's shape.
 *
 * @param m The decoded message.
 * @returns What the pod holds, with its UID.
 */
export function podResourcesOf(m: Wire.PodResources): PodResourcesMessage {
  return {
    ...m,
    containers: m.containers.map((c) => ({ ...c, memory: c.memory.map(memoryOf) })),
    memory: m.memory.map(memoryOf),
  };
}

/**
 * Decodes `podsapi.v1.PodResources` (clients).
 *
 * @param bytes The serialized message.
 * @returns What the pod holds, with its UID.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodePodResourcesMessage(bytes: Uint8Array): PodResourcesMessage {
  return podResourcesOf(POD_RESOURCES.decode(bytes));
}

/**
 * Decodes `ListDevicesRequest` (the server).
 *
 * @param bytes The serialized request.
 * @returns The resource asked for ("" for all).
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListDevicesRequest(bytes: Uint8Array): { resourceName: string } {
  return LIST_DEVICES_REQUEST.decode(bytes);
}

/**
 * Decodes a `ListDevicesResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns The node's devices.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListDevicesResponse(bytes: Uint8Array): ListDevicesResponseMessage {
  const m = LIST_DEVICES_RESPONSE.decode(bytes);
  return { ...m, memory: m.memory.map(memoryOf) };
}
