/**
 * The messages of the kubelet's podresources API (`v1.PodResourcesLister`,
 * `proto/k8s.io/kubelet/podresources/v1/api.proto`) in the plain values of
 * `model/pod_resources.ts`. The codecs are compiled from the generated
 * descriptor, strict (what the kubelet sends is checked like any input);
 * this module only maps the generated shapes. It encodes only the
 * requests; the answers of test servers that play the kubelet are encoded
 * in `tests/_support/podresources_answers.ts`.
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
import { type TypedCodec, typedCodec } from "./plain_codec.ts";

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
const ALLOCATABLE = codec<Wire.AllocatableResourcesResponse>("AllocatableResourcesResponse");
const GET_REQUEST = codec<Wire.GetPodResourcesRequest>("GetPodResourcesRequest");

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
 * Encodes a `GetPodResourcesRequest`.
 *
 * @param namespace The pod's namespace.
 * @param name The pod's name.
 * @returns The serialized request.
 */
export function encodeGetPodResourcesRequest(namespace: string, name: string): Uint8Array {
  return GET_REQUEST.encode({ podName: name, podNamespace: namespace });
}
