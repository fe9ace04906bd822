/**
 * The messages of the kubelet's podresources API (`v1.PodResourcesLister`,
 * `proto/k8s.io/kubelet/podresources/v1/api.proto`) in the plain values of
 * `model/pod_resources.ts`. The codecs are compiled from the generated
 * descriptor, strict (what the kubelet sends is checked like any input);
 * this module only maps the generated shapes. Encoding exists for the
 * requests and for test servers that play the kubelet.
 *
 * @module
 */

import type {
  AllocatableResources,
  ClaimDevice,
  ContainerDevices,
  ContainerMemory,
  ContainerResources,
  PodResources,
} from "../model/pod_resources.ts";
import * as Wire from "./generated/podresources_types.ts";
import { type MessageInit, type TypedCodec, typedCodec } from "./plain_codec.ts";

/** Method paths of `v1.PodResourcesLister`. */
export const PODRESOURCES_METHODS = {
  list: "/v1.PodResourcesLister/List",
  getAllocatableResources: "/v1.PodResourcesLister/GetAllocatableResources",
  get: "/v1.PodResourcesLister/Get",
} as const;

function codec<T>(name: string): TypedCodec<T> {
  return typedCodec<T>(Wire.PODRESOURCES_DESCRIPTOR, `v1.${name}`, { strict: true });
}

const LIST_RESPONSE = codec<Wire.ListPodResourcesResponse>("ListPodResourcesResponse");
const GET_RESPONSE = codec<Wire.GetPodResourcesResponse>("GetPodResourcesResponse");
const POD_RESOURCES = codec<Wire.PodResources>("PodResources");
const ALLOCATABLE = codec<Wire.AllocatableResourcesResponse>("AllocatableResourcesResponse");
const GET_REQUEST = codec<Wire.GetPodResourcesRequest>("GetPodResourcesRequest");

// ---- decoding ---------------------------------------------------------------

/**
 * An int64 ID (CPU, NUMA node). IDs are never negative; a negative one reads
 * as -1, "none", as the reader cannot keep every negative exact.
 */
function idOf(n: number): number {
  return n < 0 ? -1 : n;
}

function numaOf(topology: Wire.TopologyInfo | null): number[] {
  return topology === null ? [] : topology.nodes.map((node) => idOf(node.ID));
}

function devicesOf(d: Wire.ContainerDevices): ContainerDevices {
  return { resourceName: d.resourceName, deviceIds: d.deviceIds, numaNodes: numaOf(d.topology) };
}

function memoryOf(m: Wire.ContainerMemory): ContainerMemory {
  return { memoryType: m.memoryType, size: m.size, numaNodes: numaOf(m.topology) };
}

function claimDeviceOf(c: Wire.ClaimResource): ClaimDevice {
  return {
    driverName: c.driverName,
    poolName: c.poolName,
    deviceName: c.deviceName,
    shareId: c.shareId,
    cdiDevices: c.cdiDevices.map((d) => d.name),
  };
}

function containerOf(c: Wire.ContainerResources): ContainerResources {
  return {
    name: c.name,
    devices: c.devices.map(devicesOf),
    cpuIds: c.cpuIds.map(idOf),
    memory: c.memory.map(memoryOf),
    // Field 1 (class_name) is gone upstream: skipped like any unknown field.
    dynamicResources: c.dynamicResources.map((r) => ({
      claimName: r.claimName,
      claimNamespace: r.claimNamespace,
      devices: r.claimResources.map(claimDeviceOf),
    })),
  };
}

function podOf(p: Wire.PodResources): PodResources {
  return {
    namespace: p.namespace,
    name: p.name,
    containers: p.containers.map(containerOf),
    cpuIds: p.cpuIds.map(idOf),
    memory: p.memory.map(memoryOf),
  };
}

/**
 * Decodes `ListPodResourcesResponse { repeated PodResources pod_resources = 1 }`.
 *
 * @param bytes The serialized response.
 * @returns Every pod's resources, in the kubelet's order.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeListPodResourcesResponse(bytes: Uint8Array): PodResources[] {
  return LIST_RESPONSE.decode(bytes).podResources.map(podOf);
}

/**
 * Decodes `GetPodResourcesResponse { PodResources pod_resources = 1 }`.
 *
 * @param bytes The serialized response.
 * @returns The pod's resources, or `undefined` when the field is absent.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeGetPodResourcesResponse(bytes: Uint8Array): PodResources | undefined {
  const pod = GET_RESPONSE.decode(bytes).podResources;
  return pod === null ? undefined : podOf(pod);
}

/**
 * Decodes `AllocatableResourcesResponse { devices = 1; cpu_ids = 2; memory = 3 }`.
 *
 * @param bytes The serialized response.
 * @returns The node's allocatable resources.
 * @throws {TypeError} When the bytes are malformed.
 */
export function decodeAllocatableResourcesResponse(bytes: Uint8Array): AllocatableResources {
  const m = ALLOCATABLE.decode(bytes);
  return {
    devices: m.devices.map(devicesOf),
    cpuIds: m.cpuIds.map(idOf),
    memory: m.memory.map(memoryOf),
  };
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
  return GET_REQUEST.decode(bytes);
}

// ---- encoding ---------------------------------------------------------------

function topologyOf(numaNodes: readonly number[]): MessageInit<Wire.TopologyInfo> | undefined {
  return numaNodes.length === 0 ? undefined : { nodes: numaNodes.map((ID) => ({ ID })) };
}

function devicesInit(d: ContainerDevices): MessageInit<Wire.ContainerDevices> {
  return {
    resourceName: d.resourceName,
    deviceIds: d.deviceIds,
    topology: topologyOf(d.numaNodes),
  };
}

function memoryInit(m: ContainerMemory): MessageInit<Wire.ContainerMemory> {
  return { memoryType: m.memoryType, size: m.size, topology: topologyOf(m.numaNodes) };
}

function containerInit(c: ContainerResources): MessageInit<Wire.ContainerResources> {
  return {
    name: c.name,
    devices: c.devices.map(devicesInit),
    cpuIds: c.cpuIds,
    memory: c.memory.map(memoryInit),
    dynamicResources: c.dynamicResources.map((r) => ({
      claimName: r.claimName,
      claimNamespace: r.claimNamespace,
      claimResources: r.devices.map((d) => ({
        cdiDevices: d.cdiDevices.map((name) => ({ name })),
        driverName: d.driverName,
        poolName: d.poolName,
        deviceName: d.deviceName,
        // `optional string share_id`: set only when the device is shared.
        shareId: d.shareId === "" ? undefined : d.shareId,
      })),
    })),
  };
}

function podInit(p: PodResources): MessageInit<Wire.PodResources> {
  return {
    name: p.name,
    namespace: p.namespace,
    containers: p.containers.map(containerInit),
    cpuIds: p.cpuIds,
    memory: p.memory.map(memoryInit),
  };
}

/**
 * Encodes one `PodResources`.
 *
 * @param p The pod's resources.
 * @returns The serialized message.
 */
export function encodePodResources(p: PodResources): Uint8Array {
  return POD_RESOURCES.encode(podInit(p));
}

/**
 * Encodes a `ListPodResourcesResponse` (test servers).
 *
 * @param pods Every pod's resources.
 * @returns The serialized response.
 */
export function encodeListPodResourcesResponse(pods: readonly PodResources[]): Uint8Array {
  return LIST_RESPONSE.encode({ podResources: pods.map(podInit) });
}

/**
 * Encodes an `AllocatableResourcesResponse` (test servers).
 *
 * @param a The node's allocatable resources.
 * @returns The serialized response.
 */
export function encodeAllocatableResourcesResponse(a: AllocatableResources): Uint8Array {
  return ALLOCATABLE.encode({
    devices: a.devices.map(devicesInit),
    cpuIds: a.cpuIds,
    memory: a.memory.map(memoryInit),
  });
}

/**
 * Encodes a `GetPodResourcesRequest`.
 *
 * @param namespace The pod's namespace.
 * @param name The pod's name.
 * @returns The serialized request.
 */
export function encodeGetPodResourcesRequest(namespace: string, name: string): Uint8Array {
  return GET_REQUEST.encode({ podName: name, podNamespace: namespace });
}
