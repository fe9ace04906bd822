/**
 * What the kubelet's podresources API says a pod holds: per container its
 * devices (device plugins), exclusive CPUs, memory blocks and dynamic
 * resources (DRA claims with their devices and CDI names); per pod the
 * exclusive CPUs and memory of a pod-level allocation. Plain data, in the
 * shape of `k8s.io/kubelet/pkg/apis/podresources/v1` with camelCase names,
 * kept beside a pod and never written into the pod itself.
 *
 * {@linkcode normalizePodResources} puts one allocation in a canonical order
 * (the kubelet builds its answer from Go maps, so two answers for the same
 * allocation may list things in another order), so that equal allocations
 * are equal as values and a change is a real change.
 *
 * @module
 */

/** Devices of one resource given to a container by a device plugin. */
export interface ContainerDevices {
  /** e.g. `nvidia.com/gpu`. */
  readonly resourceName: string;
  /** The plugin's device IDs, sorted. */
  readonly deviceIds: readonly string[];
  /** NUMA nodes the devices sit on, sorted (empty: unknown). */
  readonly numaNodes: readonly number[];
}

/** A block of memory or hugepages pinned to NUMA nodes. */
export interface ContainerMemory {
  /** `memory`, `hugepages-2Mi`, `hugepages-1Gi`... */
  readonly memoryType: string;
  /** Bytes. */
  readonly size: number;
  readonly numaNodes: readonly number[];
}

/** One device of a DRA claim: driver, pool and device name identify it. */
export interface ClaimDevice {
  readonly driverName: string;
  readonly poolName: string;
  readonly deviceName: string;
  /** Set when the device is shared (consumable capacity); empty otherwise. */
  readonly shareId: string;
  /** Fully qualified CDI device names, e.g. `vendor.com/gpu=gpu0`. */
  readonly cdiDevices: readonly string[];
}

/** A DRA resource claim a container uses, with the devices allocated to it. */
export interface DynamicResource {
  readonly claimName: string;
  readonly claimNamespace: string;
  readonly devices: readonly ClaimDevice[];
}

/** What one container holds. */
export interface ContainerResources {
  readonly name: string;
  readonly devices: readonly ContainerDevices[];
  /** Exclusive CPU IDs, sorted. */
  readonly cpuIds: readonly number[];
  readonly memory: readonly ContainerMemory[];
  readonly dynamicResources: readonly DynamicResource[];
}

/** What one pod holds, as the kubelet lists it (keyed by namespace and name, no UID). */
export interface PodResources {
  readonly namespace: string;
  readonly name: string;
  /** Only containers that hold something. */
  readonly containers: readonly ContainerResources[];
  /** Exclusive CPUs of a pod-level allocation (they overlap the containers'). */
  readonly cpuIds: readonly number[];
  /** Memory of a pod-level allocation. */
  readonly memory: readonly ContainerMemory[];
}

/** The node's allocatable resources (`GetAllocatableResources`). */
export interface AllocatableResources {
  /** Every device the device plugins registered as healthy, by resource. */
  readonly devices: readonly ContainerDevices[];
  /** CPUs that may be exclusively allocated. */
  readonly cpuIds: readonly number[];
  readonly memory: readonly ContainerMemory[];
}

/** A pod holding a device, and which of its containers do. */
export interface DeviceHolder {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly containers: readonly string[];
}

/** One device of the node, with who holds it. */
export interface NodeDevice {
  /** The device plugin's resource, or the DRA driver's name. */
  readonly resourceName: string;
  /** The device plugin's ID, or `driver/pool/device` for a DRA device. */
  readonly deviceId: string;
  readonly numaNodes: readonly number[];
  /** Whether `GetAllocatableResources` lists it. */
  readonly allocatable: boolean;
  /** Empty: free. */
  readonly holders: readonly DeviceHolder[];
}

/** `resourceName` of exclusive CPUs in selectors and device counts. */
export const CPU_RESOURCE = "cpu";

function sortedNumbers(values: readonly number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}

function sortedStrings(values: readonly string[]): string[] {
  return [...new Set(values)].sort();
}

function byText<T>(key: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

/**
 * Device entries in canonical form: one per resource and NUMA placement
 * (the kubelet sends one entry per device, each with its own topology;
 * grouping keeps which device sits on which node), by resource, then NUMA.
 *
 * @param list Device entries as decoded.
 * @returns The canonical entries, empty ones left out.
 */
export function normalizeDevices(list: readonly ContainerDevices[]): ContainerDevices[] {
  const groups = new Map<string, { resourceName: string; ids: string[]; numa: number[] }>();
  for (const d of list) {
    const numa = sortedNumbers(d.numaNodes);
    const key = `${d.resourceName}\u0000${numa.join(",")}`;
    const group = groups.get(key) ?? { resourceName: d.resourceName, ids: [], numa };
    group.ids.push(...d.deviceIds);
    groups.set(key, group);
  }
  return [...groups.values()].map((g) => ({
    resourceName: g.resourceName,
    deviceIds: sortedStrings(g.ids),
    numaNodes: g.numa,
  })).filter((d) => d.deviceIds.length > 0).sort(
    byText((d) => `${d.resourceName}\u0000${d.numaNodes.join(",")}`),
  );
}

/**
 * Memory blocks in canonical order (by type, NUMA nodes, size).
 *
 * @param list Memory blocks as decoded.
 * @returns The canonical blocks.
 */
export function normalizeMemory(list: readonly ContainerMemory[]): ContainerMemory[] {
  const out = list.map((m) => ({
    memoryType: m.memoryType,
    size: m.size,
    numaNodes: sortedNumbers(m.numaNodes),
  }));
  return out.sort(byText((m) => `${m.memoryType}\u0000${m.numaNodes.join(",")}\u0000${m.size}`));
}

function claimDeviceKey(d: ClaimDevice): string {
  return `${d.driverName}/${d.poolName}/${d.deviceName}\u0000${d.shareId}`;
}

function normalizeDynamic(list: readonly DynamicResource[]): DynamicResource[] {
  const out = list.map((r) => ({
    claimName: r.claimName,
    claimNamespace: r.claimNamespace,
    devices: r.devices.map((d) => ({ ...d, cdiDevices: sortedStrings(d.cdiDevices) }))
      .sort(byText(claimDeviceKey)),
  }));
  return out.sort(byText((r) => `${r.claimNamespace}/${r.claimName}`));
}

/**
 * A container's resources in canonical order, or `undefined` when it holds nothing.
 *
 * @param c The container's resources as decoded.
 * @returns The canonical value.
 */
export function normalizeContainerResources(
  c: ContainerResources,
): ContainerResources | undefined {
  const out: ContainerResources = {
    name: c.name,
    devices: normalizeDevices(c.devices),
    cpuIds: sortedNumbers(c.cpuIds),
    memory: normalizeMemory(c.memory),
    dynamicResources: normalizeDynamic(c.dynamicResources),
  };
  const empty = out.devices.length === 0 && out.cpuIds.length === 0 &&
    out.memory.length === 0 && out.dynamicResources.length === 0;
  return empty ? undefined : out;
}

/**
 * A pod's resources in canonical order: containers that hold nothing left
 * out, containers by name, IDs and NUMA nodes sorted. `undefined` when the
 * pod holds nothing at all (the kubelet lists every active pod, most with
 * nothing exclusive).
 *
 * @example Usage
 * ```ts
 * import { normalizePodResources } from "./pod_resources.ts";
 * const none = normalizePodResources({
 *   namespace: "ml", name: "idle", cpuIds: [], memory: [],
 *   containers: [{ name: "app", devices: [], cpuIds: [], memory: [], dynamicResources: [] }],
 * });
 * console.assert(none === undefined);
 * ```
 *
 * @param p The pod's resources as decoded.
 * @returns The canonical value, or `undefined`.
 */
export function normalizePodResources(p: PodResources): PodResources | undefined {
  const containers: ContainerResources[] = [];
  for (const c of p.containers) {
    const n = normalizeContainerResources(c);
    if (n !== undefined) containers.push(n);
  }
  containers.sort(byText((c) => c.name));
  const out: PodResources = {
    namespace: p.namespace,
    name: p.name,
    containers,
    cpuIds: sortedNumbers(p.cpuIds),
    memory: normalizeMemory(p.memory),
  };
  return containers.length === 0 && out.cpuIds.length === 0 && out.memory.length === 0
    ? undefined
    : deepFreeze(out);
}

/**
 * The node's allocatable resources in canonical order.
 *
 * @param a As decoded.
 * @returns The canonical value.
 */
export function normalizeAllocatable(a: AllocatableResources): AllocatableResources {
  return deepFreeze({
    devices: normalizeDevices(a.devices),
    cpuIds: sortedNumbers(a.cpuIds),
    memory: normalizeMemory(a.memory),
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * Whether two normalized allocations are the same (either may be absent).
 *
 * @param a One allocation.
 * @param b Another.
 * @returns `true` when they hold the same things.
 */
export function samePodResources(
  a: PodResources | undefined,
  b: PodResources | undefined,
): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  // Normalized values have one order and one key order: text equality is value equality.
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The texts a DRA device is known by: `driver/pool/device`, the device name
 * alone, and its CDI device names.
 *
 * @param d The claim device.
 * @returns Its names.
 */
export function claimDeviceNames(d: ClaimDevice): string[] {
  const names = [`${d.driverName}/${d.poolName}/${d.deviceName}`, ...d.cdiDevices];
  if (d.deviceName !== "") names.push(d.deviceName);
  return names;
}

/** One device a container holds, under one canonical ID. */
export interface HeldDevice {
  /** The device plugin's resource, or the DRA driver's name. */
  readonly resource: string;
  /** The device plugin's ID, or `driver/pool/device` for a DRA device. */
  readonly id: string;
  readonly numaNodes: readonly number[];
}

/**
 * The devices a container holds, once each: device plugin devices by their
 * ID, DRA devices as `driver/pool/device`.
 *
 * @param c The container's resources.
 * @returns The devices.
 */
export function containerDevices(c: ContainerResources): HeldDevice[] {
  const out: HeldDevice[] = [];
  for (const d of c.devices) {
    for (const id of d.deviceIds) {
      out.push({ resource: d.resourceName, id, numaNodes: d.numaNodes });
    }
  }
  for (const r of c.dynamicResources) {
    for (const d of r.devices) {
      out.push({ resource: d.driverName, id: claimDeviceNames(d)[0]!, numaNodes: [] });
    }
  }
  return out;
}

/**
 * Every device ID a container holds, with the resource it counts under:
 * device plugin IDs under their resource name, DRA devices (by every name of
 * {@linkcode claimDeviceNames}) under their driver's name.
 *
 * @param c The container's resources.
 * @returns `[resource, id]` pairs.
 */
export function containerDeviceIds(c: ContainerResources): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const d of c.devices) for (const id of d.deviceIds) out.push([d.resourceName, id]);
  for (const r of c.dynamicResources) {
    for (const d of r.devices) {
      for (const id of claimDeviceNames(d)) out.push([d.driverName, id]);
    }
  }
  return out;
}

/**
 * Whether a container holds a resource: a device plugin resource name
 * (`nvidia.com/gpu`), a DRA driver name (`gpu.nvidia.com`),
 * {@linkcode CPU_RESOURCE} for exclusive CPUs, or a memory type (`memory`,
 * `hugepages-1Gi`).
 *
 * @param c The container's resources.
 * @param resource The resource name.
 * @returns `true` when it holds some of it.
 */
export function containerHoldsResource(c: ContainerResources, resource: string): boolean {
  if (resource === CPU_RESOURCE) return c.cpuIds.length > 0;
  return c.devices.some((d) => d.resourceName === resource) ||
    c.dynamicResources.some((r) => r.devices.some((d) => d.driverName === resource)) ||
    c.memory.some((m) => m.memoryType === resource);
}

/**
 * Whether a pod holds a resource, in a container or at pod level (see
 * {@linkcode containerHoldsResource} for the names).
 *
 * @param p The pod's resources, if any.
 * @param resource The resource name.
 * @returns `true` when it holds some of it.
 */
export function podHoldsResource(p: PodResources | undefined, resource: string): boolean {
  if (p === undefined) return false;
  if (resource === CPU_RESOURCE && p.cpuIds.length > 0) return true;
  if (p.memory.some((m) => m.memoryType === resource)) return true;
  return p.containers.some((c) => containerHoldsResource(c, resource));
}

/**
 * The containers of a pod holding a device (a device plugin ID, a DRA
 * device's name, `driver/pool/device` or CDI name).
 *
 * @param p The pod's resources, if any.
 * @param id The device ID.
 * @returns The containers' names, sorted (empty: the pod does not hold it).
 */
export function containersHoldingDevice(p: PodResources | undefined, id: string): string[] {
  if (p === undefined) return [];
  return p.containers.filter((c) => containerDeviceIds(c).some(([, d]) => d === id))
    .map((c) => c.name);
}
