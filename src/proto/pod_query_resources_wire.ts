/**
 * The messages `podsapi.v1.PodQuery` uses to say what pods hold
 * (`proto/podsapi/v1/pod_query.proto`: `PodResources` and what it contains,
 * `ListDevicesRequest`, `ListDevicesResponse`), hand-encoded: the server
 * writes them, clients (the CLI, tests) read them back.
 *
 * @module
 */

import type {
  ClaimDevice,
  ContainerDevices,
  ContainerMemory,
  ContainerResources,
  DeviceHolder,
  DynamicResource,
  NodeDevice,
  PodResources,
} from "../model/pod_resources.ts";
import {
  MessageWriter,
  readBool,
  readMessage,
  readRepeatedInt64,
  readString,
} from "./message_writer.ts";
import { expect, WIRE_VARINT, WireReader } from "./wire.ts";

/** `podsapi.v1.PodResources`: what one pod holds, with the pod's UID. */
export interface PodResourcesMessage extends PodResources {
  readonly uid: string;
}

/** `podsapi.v1.DeviceHolder`. */
export type DeviceHolderMessage = DeviceHolder;

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

// ---- encoding ---------------------------------------------------------------

function encodeDeviceGroup(d: ContainerDevices): Uint8Array {
  return new MessageWriter()
    .string(1, d.resourceName)
    .strings(2, d.deviceIds)
    .packed(3, d.numaNodes)
    .finish();
}

function encodeMemoryBlock(m: ContainerMemory): Uint8Array {
  return new MessageWriter()
    .string(1, m.memoryType)
    .varint(2, m.size)
    .packed(3, m.numaNodes)
    .finish();
}

function encodeClaimDevice(d: ClaimDevice): Uint8Array {
  return new MessageWriter()
    .string(1, d.driverName)
    .string(2, d.poolName)
    .string(3, d.deviceName)
    .string(4, d.shareId)
    .strings(5, d.cdiDevices)
    .finish();
}

function encodeDynamicResource(r: DynamicResource): Uint8Array {
  return new MessageWriter()
    .string(1, r.claimName)
    .string(2, r.claimNamespace)
    .messages(3, r.devices.map(encodeClaimDevice))
    .finish();
}

function encodeContainerResources(c: ContainerResources): Uint8Array {
  return new MessageWriter()
    .string(1, c.name)
    .messages(2, c.devices.map(encodeDeviceGroup))
    .packed(3, c.cpuIds)
    .messages(4, c.memory.map(encodeMemoryBlock))
    .messages(5, c.dynamicResources.map(encodeDynamicResource))
    .finish();
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
  const bytes = new MessageWriter()
    .string(1, uid)
    .string(2, resources.namespace)
    .string(3, resources.name)
    .messages(4, resources.containers.map(encodeContainerResources))
    .packed(5, resources.cpuIds)
    .messages(6, resources.memory.map(encodeMemoryBlock))
    .finish();
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
  return new MessageWriter().string(1, resourceName).finish();
}

/**
 * Encodes a `ListDevicesResponse`.
 *
 * @param response The node's devices.
 * @returns The serialized response.
 */
export function encodeListDevicesResponse(response: ListDevicesResponseMessage): Uint8Array {
  return new MessageWriter()
    .bool(1, response.available)
    .string(2, response.message)
    .messages(
      3,
      response.devices.map((d) =>
        new MessageWriter()
          .string(1, d.resourceName)
          .string(2, d.deviceId)
          .packed(3, d.numaNodes)
          .bool(4, d.allocatable)
          .messages(
            5,
            d.holders.map((h) =>
              new MessageWriter()
                .string(1, h.uid)
                .string(2, h.namespace)
                .string(3, h.name)
                .strings(4, h.containers)
                .finish()
            ),
          )
          .finish()
      ),
    )
    .packed(4, response.cpuIds)
    .packed(5, response.freeCpuIds)
    .messages(6, response.memory.map(encodeMemoryBlock))
    .string(7, response.resumeToken)
    .finish();
}

// ---- decoding ---------------------------------------------------------------

function decodeDeviceGroup(bytes: Uint8Array): ContainerDevices {
  const reader = new WireReader(bytes, "DeviceGroup");
  let resourceName = "";
  const deviceIds: string[] = [];
  const numaNodes: number[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) resourceName = readString(reader, f, "resource_name");
    else if (f.field === 2) deviceIds.push(readString(reader, f, "device_ids"));
    else if (f.field === 3) readRepeatedInt64(reader, f, "numa_nodes", numaNodes);
  }
  return { resourceName, deviceIds, numaNodes };
}

function decodeMemoryBlock(bytes: Uint8Array): ContainerMemory {
  const reader = new WireReader(bytes, "MemoryBlock");
  let memoryType = "";
  let size = 0;
  const numaNodes: number[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) memoryType = readString(reader, f, "memory_type");
    else if (f.field === 2) {
      expect(reader, f, WIRE_VARINT, "size_bytes");
      size = f.varint;
    } else if (f.field === 3) readRepeatedInt64(reader, f, "numa_nodes", numaNodes);
  }
  return { memoryType, size, numaNodes };
}

function decodeClaimDevice(bytes: Uint8Array): ClaimDevice {
  const reader = new WireReader(bytes, "ClaimDevice");
  const out = { driverName: "", poolName: "", deviceName: "", shareId: "" };
  const cdiDevices: string[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) out.driverName = readString(reader, f, "driver_name");
    else if (f.field === 2) out.poolName = readString(reader, f, "pool_name");
    else if (f.field === 3) out.deviceName = readString(reader, f, "device_name");
    else if (f.field === 4) out.shareId = readString(reader, f, "share_id");
    else if (f.field === 5) cdiDevices.push(readString(reader, f, "cdi_devices"));
  }
  return { ...out, cdiDevices };
}

function decodeDynamicResource(bytes: Uint8Array): DynamicResource {
  const reader = new WireReader(bytes, "DynamicResource");
  let claimName = "";
  let claimNamespace = "";
  const devices: ClaimDevice[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) claimName = readString(reader, f, "claim_name");
    else if (f.field === 2) claimNamespace = readString(reader, f, "claim_namespace");
    else if (f.field === 3) devices.push(decodeClaimDevice(readMessage(reader, f, "devices")));
  }
  return { claimName, claimNamespace, devices };
}

function decodeContainerResources(bytes: Uint8Array): ContainerResources {
  const reader = new WireReader(bytes, "ContainerResources");
  let name = "";
  const devices: ContainerDevices[] = [];
  const cpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  const dynamicResources: DynamicResource[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) name = readString(reader, f, "name");
    else if (f.field === 2) devices.push(decodeDeviceGroup(readMessage(reader, f, "devices")));
    else if (f.field === 3) readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
    else if (f.field === 4) memory.push(decodeMemoryBlock(readMessage(reader, f, "memory")));
    else if (f.field === 5) {
      dynamicResources.push(decodeDynamicResource(readMessage(reader, f, "dynamic_resources")));
    }
  }
  return { name, devices, cpuIds, memory, dynamicResources };
}

/**
 * Decodes `podsapi.v1.PodResources` (clients).
 *
 * @param bytes The serialized message.
 * @returns What the pod holds, with its UID.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodePodResourcesMessage(bytes: Uint8Array): PodResourcesMessage {
  const reader = new WireReader(bytes, "PodResources");
  let uid = "";
  let namespace = "";
  let name = "";
  const containers: ContainerResources[] = [];
  const cpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) uid = readString(reader, f, "uid");
    else if (f.field === 2) namespace = readString(reader, f, "namespace");
    else if (f.field === 3) name = readString(reader, f, "name");
    else if (f.field === 4) {
      containers.push(decodeContainerResources(readMessage(reader, f, "containers")));
    } else if (f.field === 5) readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
    else if (f.field === 6) memory.push(decodeMemoryBlock(readMessage(reader, f, "memory")));
  }
  return { uid, namespace, name, containers, cpuIds, memory };
}

/**
 * Decodes `ListDevicesRequest` (the server).
 *
 * @param bytes The serialized request.
 * @returns The resource asked for ("" for all).
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListDevicesRequest(bytes: Uint8Array): { resourceName: string } {
  const reader = new WireReader(bytes, "ListDevicesRequest");
  let resourceName = "";
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) resourceName = readString(reader, f, "resource_name");
  }
  return { resourceName };
}

function decodeHolder(bytes: Uint8Array): DeviceHolderMessage {
  const reader = new WireReader(bytes, "DeviceHolder");
  const out = { uid: "", namespace: "", name: "" };
  const containers: string[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) out.uid = readString(reader, f, "uid");
    else if (f.field === 2) out.namespace = readString(reader, f, "namespace");
    else if (f.field === 3) out.name = readString(reader, f, "name");
    else if (f.field === 4) containers.push(readString(reader, f, "containers"));
  }
  return { ...out, containers };
}

function decodeNodeDevice(bytes: Uint8Array): NodeDeviceMessage {
  const reader = new WireReader(bytes, "NodeDevice");
  let resourceName = "";
  let deviceId = "";
  const numaNodes: number[] = [];
  let allocatable = false;
  const holders: DeviceHolderMessage[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) resourceName = readString(reader, f, "resource_name");
    else if (f.field === 2) deviceId = readString(reader, f, "device_id");
    else if (f.field === 3) readRepeatedInt64(reader, f, "numa_nodes", numaNodes);
    else if (f.field === 4) allocatable = readBool(reader, f, "allocatable");
    else if (f.field === 5) holders.push(decodeHolder(readMessage(reader, f, "holders")));
  }
  return { resourceName, deviceId, numaNodes, allocatable, holders };
}

/**
 * Decodes a `ListDevicesResponse` (clients).
 *
 * @param bytes The serialized response.
 * @returns The node's devices.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListDevicesResponse(bytes: Uint8Array): ListDevicesResponseMessage {
  const reader = new WireReader(bytes, "ListDevicesResponse");
  let available = false;
  let message = "";
  let resumeToken = "";
  const devices: NodeDeviceMessage[] = [];
  const cpuIds: number[] = [];
  const freeCpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  while (!reader.done) {
    const f = reader.next();
    switch (f.field) {
      case 1:
        available = readBool(reader, f, "available");
        break;
      case 2:
        message = readString(reader, f, "message");
        break;
      case 3:
        devices.push(decodeNodeDevice(readMessage(reader, f, "devices")));
        break;
      case 4:
        readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
        break;
      case 5:
        readRepeatedInt64(reader, f, "free_cpu_ids", freeCpuIds);
        break;
      case 6:
        memory.push(decodeMemoryBlock(readMessage(reader, f, "memory")));
        break;
      case 7:
        resumeToken = readString(reader, f, "resume_token");
        break;
    }
  }
  return { available, message, devices, cpuIds, freeCpuIds, memory, resumeToken };
}
