/**
 * The messages of the kubelet's podresources API (`v1.PodResourcesLister`,
 * `proto/k8s.io/kubelet/podresources/v1/api.proto`), encoded and decoded by
 * hand on the project's wire reader and writer. Decoding is strict (what
 * the kubelet sends is checked like any input) and yields the plain values
 * of `model/pod_resources.ts`; encoding exists for the requests and for test
 * servers that play the kubelet.
 *
 * @module
 */

import {
  MessageWriter,
  readInt64,
  readMessage,
  readRepeatedInt64,
  readString,
} from "../../proto/message_writer.ts";
import { expect, WIRE_VARINT, WireReader } from "../../proto/wire.ts";
import type {
  AllocatableResources,
  ClaimDevice,
  ContainerDevices,
  ContainerMemory,
  ContainerResources,
  DynamicResource,
  PodResources,
} from "../../model/pod_resources.ts";

/** Method paths of `v1.PodResourcesLister`. */
export const PODRESOURCES_METHODS = {
  list: "/v1.PodResourcesLister/List",
  getAllocatableResources: "/v1.PodResourcesLister/GetAllocatableResources",
  get: "/v1.PodResourcesLister/Get",
} as const;

// ---- decoding ---------------------------------------------------------------

function decodeTopology(bytes: Uint8Array): number[] {
  const reader = new WireReader(bytes, "TopologyInfo");
  const nodes: number[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field !== 1) continue;
    const node = new WireReader(readMessage(reader, f, "nodes"), "NUMANode");
    let id = 0;
    while (!node.done) {
      const g = node.next();
      if (g.field === 1) id = readInt64(node, g, "ID");
    }
    nodes.push(id);
  }
  return nodes;
}

function decodeDevices(bytes: Uint8Array): ContainerDevices {
  const reader = new WireReader(bytes, "ContainerDevices");
  let resourceName = "";
  const deviceIds: string[] = [];
  let numaNodes: number[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) resourceName = readString(reader, f, "resource_name");
    else if (f.field === 2) deviceIds.push(readString(reader, f, "device_ids"));
    else if (f.field === 3) numaNodes = decodeTopology(readMessage(reader, f, "topology"));
  }
  return { resourceName, deviceIds, numaNodes };
}

function decodeMemory(bytes: Uint8Array): ContainerMemory {
  const reader = new WireReader(bytes, "ContainerMemory");
  let memoryType = "";
  let size = 0;
  let numaNodes: number[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) memoryType = readString(reader, f, "memory_type");
    else if (f.field === 2) {
      expect(reader, f, WIRE_VARINT, "size");
      size = f.varint;
    } else if (f.field === 3) numaNodes = decodeTopology(readMessage(reader, f, "topology"));
  }
  return { memoryType, size, numaNodes };
}

function decodeClaimResource(bytes: Uint8Array): ClaimDevice {
  const reader = new WireReader(bytes, "ClaimResource");
  const cdiDevices: string[] = [];
  let driverName = "";
  let poolName = "";
  let deviceName = "";
  let shareId = "";
  while (!reader.done) {
    const f = reader.next();
    switch (f.field) {
      case 1: {
        const cdi = new WireReader(readMessage(reader, f, "cdi_devices"), "CDIDevice");
        let name = "";
        while (!cdi.done) {
          const g = cdi.next();
          if (g.field === 1) name = readString(cdi, g, "name");
        }
        cdiDevices.push(name);
        break;
      }
      case 2:
        driverName = readString(reader, f, "driver_name");
        break;
      case 3:
        poolName = readString(reader, f, "pool_name");
        break;
      case 4:
        deviceName = readString(reader, f, "device_name");
        break;
      case 5:
        shareId = readString(reader, f, "share_id");
        break;
    }
  }
  return { driverName, poolName, deviceName, shareId, cdiDevices };
}

function decodeDynamicResource(bytes: Uint8Array): DynamicResource {
  const reader = new WireReader(bytes, "DynamicResource");
  let claimName = "";
  let claimNamespace = "";
  const devices: ClaimDevice[] = [];
  while (!reader.done) {
    const f = reader.next();
    // Field 1 (class_name) is gone upstream: skipped like any unknown field.
    if (f.field === 2) claimName = readString(reader, f, "claim_name");
    else if (f.field === 3) claimNamespace = readString(reader, f, "claim_namespace");
    else if (f.field === 4) {
      devices.push(decodeClaimResource(readMessage(reader, f, "claim_resources")));
    }
  }
  return { claimName, claimNamespace, devices };
}

function decodeContainer(bytes: Uint8Array): ContainerResources {
  const reader = new WireReader(bytes, "ContainerResources");
  let name = "";
  const devices: ContainerDevices[] = [];
  const cpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  const dynamicResources: DynamicResource[] = [];
  while (!reader.done) {
    const f = reader.next();
    switch (f.field) {
      case 1:
        name = readString(reader, f, "name");
        break;
      case 2:
        devices.push(decodeDevices(readMessage(reader, f, "devices")));
        break;
      case 3:
        readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
        break;
      case 4:
        memory.push(decodeMemory(readMessage(reader, f, "memory")));
        break;
      case 5:
        dynamicResources.push(decodeDynamicResource(readMessage(reader, f, "dynamic_resources")));
        break;
    }
  }
  return { name, devices, cpuIds, memory, dynamicResources };
}

/**
 * Decodes one `PodResources` (as decoded, not normalized).
 *
 * @param bytes The serialized message.
 * @returns The pod's resources.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodePodResources(bytes: Uint8Array): PodResources {
  const reader = new WireReader(bytes, "PodResources");
  let name = "";
  let namespace = "";
  const containers: ContainerResources[] = [];
  const cpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  while (!reader.done) {
    const f = reader.next();
    switch (f.field) {
      case 1:
        name = readString(reader, f, "name");
        break;
      case 2:
        namespace = readString(reader, f, "namespace");
        break;
      case 3:
        containers.push(decodeContainer(readMessage(reader, f, "containers")));
        break;
      case 4:
        readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
        break;
      case 5:
        memory.push(decodeMemory(readMessage(reader, f, "memory")));
        break;
    }
  }
  return { namespace, name, containers, cpuIds, memory };
}

/**
 * Decodes `ListPodResourcesResponse { repeated PodResources pod_resources = 1 }`.
 *
 * @param bytes The serialized response.
 * @returns Every pod's resources, in the kubelet's order.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListPodResourcesResponse(bytes: Uint8Array): PodResources[] {
  const reader = new WireReader(bytes, "ListPodResourcesResponse");
  const pods: PodResources[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) pods.push(decodePodResources(readMessage(reader, f, "pod_resources")));
  }
  return pods;
}

/**
 * Decodes `GetPodResourcesResponse { PodResources pod_resources = 1 }`.
 *
 * @param bytes The serialized response.
 * @returns The pod's resources, or `undefined` when the field is absent.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetPodResourcesResponse(bytes: Uint8Array): PodResources | undefined {
  const reader = new WireReader(bytes, "GetPodResourcesResponse");
  let pod: PodResources | undefined;
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) pod = decodePodResources(readMessage(reader, f, "pod_resources"));
  }
  return pod;
}

/**
 * Decodes `AllocatableResourcesResponse { devices = 1; cpu_ids = 2; memory = 3 }`.
 *
 * @param bytes The serialized response.
 * @returns The node's allocatable resources.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeAllocatableResourcesResponse(bytes: Uint8Array): AllocatableResources {
  const reader = new WireReader(bytes, "AllocatableResourcesResponse");
  const devices: ContainerDevices[] = [];
  const cpuIds: number[] = [];
  const memory: ContainerMemory[] = [];
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) devices.push(decodeDevices(readMessage(reader, f, "devices")));
    else if (f.field === 2) readRepeatedInt64(reader, f, "cpu_ids", cpuIds);
    else if (f.field === 3) memory.push(decodeMemory(readMessage(reader, f, "memory")));
  }
  return { devices, cpuIds, memory };
}

/**
 * Decodes `GetPodResourcesRequest { pod_name = 1; pod_namespace = 2 }` (test servers).
 *
 * @param bytes The serialized request.
 * @returns The pod named.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetPodResourcesRequest(
  bytes: Uint8Array,
): { podName: string; podNamespace: string } {
  const reader = new WireReader(bytes, "GetPodResourcesRequest");
  let podName = "";
  let podNamespace = "";
  while (!reader.done) {
    const f = reader.next();
    if (f.field === 1) podName = readString(reader, f, "pod_name");
    else if (f.field === 2) podNamespace = readString(reader, f, "pod_namespace");
  }
  return { podName, podNamespace };
}

// ---- encoding ---------------------------------------------------------------

function encodeTopology(numaNodes: readonly number[]): Uint8Array | undefined {
  if (numaNodes.length === 0) return undefined;
  return new MessageWriter()
    .messages(1, numaNodes.map((id) => new MessageWriter().varint(1, id).finish()))
    .finish();
}

function encodeDevices(d: ContainerDevices): Uint8Array {
  return new MessageWriter()
    .string(1, d.resourceName)
    .strings(2, d.deviceIds)
    .message(3, encodeTopology(d.numaNodes))
    .finish();
}

function encodeMemory(m: ContainerMemory): Uint8Array {
  return new MessageWriter()
    .string(1, m.memoryType)
    .varint(2, m.size)
    .message(3, encodeTopology(m.numaNodes))
    .finish();
}

function encodeClaimDevice(d: ClaimDevice): Uint8Array {
  const w = new MessageWriter()
    .messages(1, d.cdiDevices.map((name) => new MessageWriter().string(1, name).finish()))
    .string(2, d.driverName)
    .string(3, d.poolName)
    .string(4, d.deviceName);
  // `optional string share_id`: set only when the device is shared.
  if (d.shareId !== "") w.presentString(5, d.shareId);
  return w.finish();
}

function encodeContainer(c: ContainerResources): Uint8Array {
  return new MessageWriter()
    .string(1, c.name)
    .messages(2, c.devices.map(encodeDevices))
    .packed(3, c.cpuIds)
    .messages(4, c.memory.map(encodeMemory))
    .messages(
      5,
      c.dynamicResources.map((r) =>
        new MessageWriter()
          .string(2, r.claimName)
          .string(3, r.claimNamespace)
          .messages(4, r.devices.map(encodeClaimDevice))
          .finish()
      ),
    )
    .finish();
}

/**
 * Encodes one `PodResources`.
 *
 * @param p The pod's resources.
 * @returns The serialized message.
 */
export function encodePodResources(p: PodResources): Uint8Array {
  return new MessageWriter()
    .string(1, p.name)
    .string(2, p.namespace)
    .messages(3, p.containers.map(encodeContainer))
    .packed(4, p.cpuIds)
    .messages(5, p.memory.map(encodeMemory))
    .finish();
}

/**
 * Encodes a `ListPodResourcesResponse` (test servers).
 *
 * @param pods Every pod's resources.
 * @returns The serialized response.
 */
export function encodeListPodResourcesResponse(pods: readonly PodResources[]): Uint8Array {
  return new MessageWriter().messages(1, pods.map(encodePodResources)).finish();
}

/**
 * Encodes an `AllocatableResourcesResponse` (test servers).
 *
 * @param a The node's allocatable resources.
 * @returns The serialized response.
 */
export function encodeAllocatableResourcesResponse(a: AllocatableResources): Uint8Array {
  return new MessageWriter()
    .messages(1, a.devices.map(encodeDevices))
    .packed(2, a.cpuIds)
    .messages(3, a.memory.map(encodeMemory))
    .finish();
}

/**
 * Encodes a `GetPodResourcesRequest`.
 *
 * @param namespace The pod's namespace.
 * @param name The pod's name.
 * @returns The serialized request.
 */
export function encodeGetPodResourcesRequest(namespace: string, name: string): Uint8Array {
  return new MessageWriter().string(1, name).string(2, namespace).finish();
}
