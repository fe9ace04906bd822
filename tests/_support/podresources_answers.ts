/**
 * What a test server that plays the kubelet's podresources API sends and
 * reads: the answers encoded from the plain values of
 * `model/pod_resources.ts` (the daemon only decodes them), and the Get
 * request decoded. Built on the same compiled codecs as
 * `src/proto/podresources_wire.ts`.
 *
 * @module
 */

import type {
  AllocatableResources,
  ContainerDevices,
  ContainerMemory,
  ContainerResources,
  PodResources,
} from "../../src/model/pod_resources.ts";
import * as Wire from "../../src/proto/generated/podresources_types.ts";
import { type MessageInit, type TypedCodec, typedCodec } from "../../src/proto/plain_codec.ts";

function codec<T>(name: string): TypedCodec<T> {
  return typedCodec<T>(Wire.PODRESOURCES_DESCRIPTOR, `v1.${name}`, { strict: true });
}

const LIST_RESPONSE = codec<Wire.ListPodResourcesResponse>("ListPodResourcesResponse");
const POD_RESOURCES = codec<Wire.PodResources>("PodResources");
const ALLOCATABLE = codec<Wire.AllocatableResourcesResponse>("AllocatableResourcesResponse");
const GET_REQUEST = codec<Wire.GetPodResourcesRequest>("GetPodResourcesRequest");

/**
 * Decodes `GetPodResourcesRequest { pod_name = 1; pod_namespace = 2 }`.
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
 * Encodes a `ListPodResourcesResponse`.
 *
 * @param pods Every pod's resources.
 * @returns The serialized response.
 */
export function encodeListPodResourcesResponse(pods: readonly PodResources[]): Uint8Array {
  return LIST_RESPONSE.encode({ podResources: pods.map(podInit) });
}

/**
 * Encodes an `AllocatableResourcesResponse`.
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
