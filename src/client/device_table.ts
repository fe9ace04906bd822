/**
 * How `pods-api devices` prints what pods hold, for people used to crictl
 * and nvidia-smi: one row per device (a GPU, a VF, a DRA device) with its
 * pod, container and NUMA node; exclusive CPUs as a cpuset list (`2-3,66`,
 * as `/sys/fs/cgroup/.../cpuset.cpus` reads); memory blocks with their size
 * (`2Gi`). The node's view adds each device's state, `allocated` or `free`.
 *
 * @module
 */

import type { PodResources } from "../model/pod_resources.ts";
import { CPU_RESOURCE } from "../model/pod_resources.ts";
import type { NodeDevicesInfo, PodResourcesInfo } from "./pod_query_client.ts";

/** The CONTAINER cell of a pod-level allocation. */
export const POD_LEVEL = "<pod>";

/**
 * CPU IDs as a cpuset list: ascending, runs as ranges.
 *
 * @example Usage
 * ```ts
 * import { cpuList } from "./device_table.ts";
 * cpuList([66, 2, 3]); // "2-3,66"
 * ```
 *
 * @param ids CPU IDs.
 * @returns The list, or "" for none.
 */
export function cpuList(ids: readonly number[]): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j + 1;
  }
  return parts.join(",");
}

const UNITS = ["Ki", "Mi", "Gi", "Ti", "Pi"] as const;

/**
 * A byte count as Kubernetes quantities print it: the largest binary unit
 * that divides it, else bytes.
 *
 * @param bytes The size.
 * @returns e.g. `2Gi`, `1536Mi`, `1000`.
 */
export function memorySize(bytes: number): string {
  let value = bytes;
  let unit = "";
  for (const next of UNITS) {
    if (value === 0 || value % 1024 !== 0) break;
    value /= 1024;
    unit = next;
  }
  return `${value}${unit}`;
}

function numa(nodes: readonly number[]): string {
  return nodes.length === 0 ? "-" : nodes.join(",");
}

/** One row of the allocations table. */
export interface AllocationRow {
  readonly namespace: string;
  readonly pod: string;
  readonly uid: string;
  readonly container: string;
  readonly resource: string;
  /** A device ID, a cpuset list or a memory size. */
  readonly device: string;
  readonly numa: string;
  /** The DRA claim (`namespace/name`), for a DRA device. */
  readonly claim: string;
  /** CDI device names, for a DRA device. */
  readonly cdi: string;
}

function rowsOfHeld(
  base: Pick<AllocationRow, "namespace" | "pod" | "uid">,
  container: string,
  held: Pick<PodResources, "cpuIds" | "memory">,
): AllocationRow[] {
  const rows: AllocationRow[] = [];
  const none = { claim: "", cdi: "" };
  if (held.cpuIds.length > 0) {
    rows.push({
      ...base,
      ...none,
      container,
      resource: CPU_RESOURCE,
      device: cpuList(held.cpuIds),
      numa: "-",
    });
  }
  for (const m of held.memory) {
    rows.push({
      ...base,
      ...none,
      container,
      resource: m.memoryType,
      device: memorySize(m.size),
      numa: numa(m.numaNodes),
    });
  }
  return rows;
}

/**
 * The rows of what pods hold: per container its devices (one row each),
 * DRA devices, CPUs and memory; then pod-level CPUs and memory.
 *
 * @param pods What each pod holds.
 * @param resource Only rows of this resource (device plugin resource, DRA driver, `cpu`, memory type); empty: all.
 * @returns Rows sorted by namespace, pod, container, resource, device.
 */
export function allocationRows(
  pods: readonly PodResourcesInfo[],
  resource = "",
): AllocationRow[] {
  const rows: AllocationRow[] = [];
  for (const p of pods) {
    const base = { namespace: p.namespace, pod: p.name, uid: p.uid };
    for (const c of p.containers) {
      for (const d of c.devices) {
        for (const id of d.deviceIds) {
          rows.push({
            ...base,
            container: c.name,
            resource: d.resourceName,
            device: id,
            numa: numa(d.numaNodes),
            claim: "",
            cdi: "",
          });
        }
      }
      for (const r of c.dynamicResources) {
        for (const d of r.devices) {
          rows.push({
            ...base,
            container: c.name,
            resource: d.driverName,
            device: `${d.driverName}/${d.poolName}/${d.deviceName}`,
            numa: "-",
            claim: `${r.claimNamespace}/${r.claimName}`,
            cdi: d.cdiDevices.join(","),
          });
        }
      }
      rows.push(...rowsOfHeld(base, c.name, c));
    }
    rows.push(...rowsOfHeld(base, POD_LEVEL, p));
  }
  const key = (r: AllocationRow) =>
    [r.namespace, r.pod, r.container === POD_LEVEL ? "\uffff" : r.container, r.resource, r.device]
      .join("\u0000");
  return rows.filter((r) => resource === "" || r.resource === resource)
    .sort((a, b) => key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
}

/**
 * The cells of the allocations table.
 *
 * @param rows The rows.
 * @param options `namespace`: print the NAMESPACE column; `wide`: add CLAIM, CDI and POD UID.
 * @returns The header, then one line of cells per row.
 */
export function allocationTable(
  rows: readonly AllocationRow[],
  options: { namespace: boolean; wide: boolean },
): string[][] {
  const header = [
    ...(options.namespace ? ["NAMESPACE"] : []),
    "POD",
    "CONTAINER",
    "RESOURCE",
    "DEVICE",
    "NUMA",
    ...(options.wide ? ["CLAIM", "CDI", "POD UID"] : []),
  ];
  return [
    header,
    ...rows.map((r) => [
      ...(options.namespace ? [r.namespace] : []),
      r.pod,
      r.container,
      r.resource,
      r.device,
      r.numa,
      ...(options.wide ? [r.claim || "-", r.cdi || "-", r.uid] : []),
    ]),
  ];
}

/**
 * The cells of the node's devices, as nvidia-smi lists GPUs and their
 * processes: each device with its state and holder, then the exclusive CPUs
 * (free ones in one row, held ones per container).
 *
 * @param node The node's devices (`ListDevices`).
 * @param cpuHolders What pods hold, for the rows of held CPUs.
 * @param options `wide`: add ALLOCATABLE and POD UID.
 * @returns The header, then one line of cells per row.
 */
export function nodeDeviceTable(
  node: NodeDevicesInfo,
  cpuHolders: readonly PodResourcesInfo[],
  options: { wide: boolean },
): string[][] {
  const header = [
    "RESOURCE",
    "DEVICE",
    "NUMA",
    "STATE",
    "POD",
    "CONTAINER",
    ...(options.wide ? ["ALLOCATABLE", "POD UID"] : []),
  ];
  const rows: string[][] = [header];
  const wide = (allocatable: string, uid: string) => options.wide ? [allocatable, uid] : [];
  for (const d of node.devices) {
    const allocatable = d.allocatable ? "yes" : "no";
    if (d.holders.length === 0) {
      rows.push([
        d.resourceName,
        d.deviceId,
        numa(d.numaNodes),
        "free",
        "-",
        "-",
        ...wide(allocatable, "-"),
      ]);
    }
    for (const h of d.holders) {
      rows.push([
        d.resourceName,
        d.deviceId,
        numa(d.numaNodes),
        "allocated",
        `${h.namespace}/${h.name}`,
        h.containers.join(","),
        ...wide(allocatable, h.uid),
      ]);
    }
  }
  if (node.freeCpuIds.length > 0) {
    rows.push([CPU_RESOURCE, cpuList(node.freeCpuIds), "-", "free", "-", "-", ...wide("yes", "-")]);
  }
  for (const r of allocationRows(cpuHolders, CPU_RESOURCE)) {
    rows.push([
      CPU_RESOURCE,
      r.device,
      "-",
      "allocated",
      `${r.namespace}/${r.pod}`,
      r.container,
      ...wide("yes", r.uid),
    ]);
  }
  return rows;
}

/**
 * A pod's DEVICES cell for `pods-api list -o wide`: per resource how many
 * devices its containers hold (`nvidia.com/gpu:2`), `cpu:N` for exclusive
 * CPUs.
 *
 * @param resources What the pod holds, if anything.
 * @returns The cell; `<none>` when it holds nothing.
 */
export function deviceSummary(resources: PodResources | undefined): string {
  if (resources === undefined) return "<none>";
  const counts = new Map<string, number>();
  const add = (resource: string, n: number) =>
    counts.set(resource, (counts.get(resource) ?? 0) + n);
  const cpus = new Set<number>(resources.cpuIds);
  for (const c of resources.containers) {
    for (const d of c.devices) add(d.resourceName, d.deviceIds.length);
    for (const r of c.dynamicResources) for (const d of r.devices) add(d.driverName, 1);
    for (const id of c.cpuIds) cpus.add(id);
  }
  if (cpus.size > 0) add(CPU_RESOURCE, cpus.size);
  if (counts.size === 0) return "<none>";
  return [...counts].sort(([a], [b]) => a < b ? -1 : 1).map(([r, n]) => `${r}:${n}`).join(",");
}
