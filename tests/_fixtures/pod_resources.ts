/**
 * Builders of podresources values (what the kubelet's `List` says a pod
 * holds) for the tests.
 *
 * @module
 */

import type {
  ContainerResources,
  DynamicResource,
  PodResources,
} from "../../src/model/pod_resources.ts";

/** Options of {@linkcode containerResources}. */
export interface ContainerResourcesOptions {
  /** `[resource, ids, numa]` per device group. */
  devices?: ReadonlyArray<readonly [string, readonly string[], (readonly number[])?]>;
  cpuIds?: readonly number[];
  memory?: ReadonlyArray<readonly [string, number, (readonly number[])?]>;
  dynamicResources?: readonly DynamicResource[];
}

/**
 * One container's resources.
 *
 * @param name The container's name.
 * @param options What it holds.
 * @returns The value.
 */
export function containerResources(
  name: string,
  options: ContainerResourcesOptions = {},
): ContainerResources {
  return {
    name,
    devices: (options.devices ?? []).map(([resourceName, deviceIds, numa]) => ({
      resourceName,
      deviceIds: [...deviceIds],
      numaNodes: [...(numa ?? [])],
    })),
    cpuIds: [...(options.cpuIds ?? [])],
    memory: (options.memory ?? []).map(([memoryType, size, numa]) => ({
      memoryType,
      size,
      numaNodes: [...(numa ?? [])],
    })),
    dynamicResources: [...(options.dynamicResources ?? [])],
  };
}

/**
 * One pod's resources as the kubelet lists them.
 *
 * @param namespace The pod's namespace.
 * @param name The pod's name.
 * @param containers Its containers' resources.
 * @returns The value.
 */
export function podResources(
  namespace: string,
  name: string,
  containers: readonly ContainerResources[],
): PodResources {
  return { namespace, name, containers: [...containers], cpuIds: [], memory: [] };
}

/**
 * A pod whose one container `app` holds GPUs.
 *
 * @param namespace The pod's namespace.
 * @param name The pod's name.
 * @param gpus The GPU IDs.
 * @returns The value.
 */
export function gpuPod(namespace: string, name: string, gpus: readonly string[]): PodResources {
  return podResources(namespace, name, [
    containerResources("app", { devices: [["nvidia.com/gpu", gpus, [0]]] }),
  ]);
}
