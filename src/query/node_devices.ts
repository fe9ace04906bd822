/**
 * The node's devices as an agent asks about them: every allocatable device
 * (`GetAllocatableResources`) with the pods and containers holding it, or
 * free; devices held but not allocatable (DRA devices, a device that turned
 * unhealthy while in use) are listed with their holders too. Exclusive CPUs
 * the same way, as allocatable and free IDs. Read from the pods in the cache
 * at the moment of asking, so it is as current as the last podresources
 * answer.
 *
 * @module
 */

import type { CachedPod, PodStore } from "../cache/types.ts";
import type { Metrics } from "../metrics/metrics.ts";
import {
  type AllocatableResources,
  containerDevices,
  type ContainerMemory,
  CPU_RESOURCE,
  type DeviceHolder,
  type HeldDevice,
  type NodeDevice,
  normalizeAllocatable,
} from "../model/pod_resources.ts";

export type { DeviceHolder, NodeDevice };

/** The node's devices, CPUs and memory as last read, with who holds what. */
export interface NodeDevicesView {
  /** Whether the kubelet's podresources API answers. */
  readonly available: boolean;
  /** Why it does not (empty when it does). */
  readonly reason: string;
  /** Sorted by resource, then ID. */
  readonly devices: readonly NodeDevice[];
  /** CPUs that may be exclusively allocated. */
  readonly cpuIds: readonly number[];
  /** Of those, the ones no container holds exclusively. */
  readonly freeCpuIds: readonly number[];
  /** Allocatable memory blocks per type and NUMA node. */
  readonly memory: readonly ContainerMemory[];
}

/** Options of {@linkcode NodeDevices}. */
export interface NodeDevicesOptions {
  store: PodStore;
  /** Where device counts go (`pods_api_devices`). */
  metrics?: Metrics;
}

const EMPTY: AllocatableResources = Object.freeze({ devices: [], cpuIds: [], memory: [] });

/** The node's allocatable resources and who holds them. */
export class NodeDevices {
  readonly #store: PodStore;
  readonly #metrics: Metrics | undefined;
  #allocatable: AllocatableResources = EMPTY;
  #available = false;
  #reason = "the podresources API has not answered yet";
  /** Resources counted in the metric last time: those gone are set to 0. */
  #counted = new Set<string>();

  /** @param options The pods and the metrics. */
  constructor(options: NodeDevicesOptions) {
    this.#store = options.store;
    this.#metrics = options.metrics;
  }

  /**
   * Takes a `GetAllocatableResources` answer.
   *
   * @param allocatable As decoded.
   */
  setAllocatable(allocatable: AllocatableResources): void {
    this.#allocatable = normalizeAllocatable(allocatable);
    this.refreshMetrics();
  }

  /**
   * Records whether the podresources API answers.
   *
   * @param available Whether it does.
   * @param reason Why not.
   */
  setAvailability(available: boolean, reason: string): void {
    this.#available = available;
    this.#reason = available ? "" : reason;
  }

  /**
   * The node's devices now.
   *
   * @param resourceName Only this resource (`cpu` for CPUs alone); empty: all.
   * @returns Devices with holders, CPUs and memory.
   */
  view(resourceName = ""): NodeDevicesView {
    const pods = this.#store.list();
    const devices = [...this.#devices(pods).values()]
      .filter((d) => resourceName === "" || d.resourceName === resourceName)
      .sort((a, b) =>
        a.resourceName === b.resourceName
          ? (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0)
          : (a.resourceName < b.resourceName ? -1 : 1)
      );
    const cpus = resourceName === "" || resourceName === CPU_RESOURCE;
    const held = heldCpus(pods);
    const cpuIds = cpus ? this.#allocatable.cpuIds : [];
    return {
      available: this.#available,
      reason: this.#reason,
      devices,
      cpuIds,
      freeCpuIds: cpuIds.filter((id) => !held.has(id)),
      memory: resourceName === ""
        ? this.#allocatable.memory
        : this.#allocatable.memory.filter((m) => m.memoryType === resourceName),
    };
  }

  /** Sets `pods_api_devices` from the pods and allocatable resources now. */
  refreshMetrics(): void {
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    const pods = this.#store.list();
    const counts = new Map<string, { allocated: number; free: number }>();
    const count = (resource: string) => {
      let c = counts.get(resource);
      if (c === undefined) counts.set(resource, c = { allocated: 0, free: 0 });
      return c;
    };
    for (const d of this.#devices(pods).values()) {
      count(d.resourceName)[d.holders.length > 0 ? "allocated" : "free"]++;
    }
    const held = heldCpus(pods);
    if (this.#allocatable.cpuIds.length > 0 || held.size > 0) {
      const allocatable = new Set(this.#allocatable.cpuIds);
      const c = count(CPU_RESOURCE);
      c.allocated = held.size;
      for (const id of allocatable) if (!held.has(id)) c.free++;
    }
    for (const resource of this.#counted) {
      if (!counts.has(resource)) counts.set(resource, { allocated: 0, free: 0 });
    }
    for (const [resource, c] of counts) {
      metrics.devices.set({ resource, state: "allocated" }, c.allocated);
      metrics.devices.set({ resource, state: "free" }, c.free);
    }
    this.#counted = new Set(counts.keys());
  }

  #devices(pods: readonly CachedPod[]): Map<string, NodeDevice> {
    const out = new Map<string, NodeDevice>();
    const keyOf = (resource: string, id: string) => `${resource}\u0000${id}`;
    for (const group of this.#allocatable.devices) {
      for (const id of group.deviceIds) {
        out.set(keyOf(group.resourceName, id), {
          resourceName: group.resourceName,
          deviceId: id,
          numaNodes: group.numaNodes,
          allocatable: true,
          holders: [],
        });
      }
    }
    for (const pod of pods) {
      const resources = pod.resources;
      if (resources === undefined) continue;
      const byDevice = new Map<string, { device: HeldDevice; containers: string[] }>();
      for (const c of resources.containers) {
        for (const d of containerDevices(c)) {
          const key = keyOf(d.resource, d.id);
          const entry = byDevice.get(key) ?? { device: d, containers: [] };
          entry.containers.push(c.name);
          byDevice.set(key, entry);
        }
      }
      for (const [key, { device, containers }] of byDevice) {
        const known = out.get(key);
        const holder: DeviceHolder = {
          uid: pod.uid,
          namespace: pod.pod.metadata.namespace,
          name: pod.pod.metadata.name,
          containers,
        };
        out.set(key, {
          resourceName: device.resource,
          deviceId: device.id,
          numaNodes: known?.numaNodes ?? device.numaNodes,
          allocatable: known?.allocatable ?? false,
          holders: [...(known?.holders ?? []), holder],
        });
      }
    }
    return out;
  }
}

function heldCpus(pods: readonly CachedPod[]): Set<number> {
  const held = new Set<number>();
  for (const pod of pods) {
    const r = pod.resources;
    if (r === undefined) continue;
    for (const id of r.cpuIds) held.add(id);
    for (const c of r.containers) for (const id of c.cpuIds) held.add(id);
  }
  return held;
}
