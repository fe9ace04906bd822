/**
 * Pods as `kubectl get pods` prints them: its columns (NAME, READY, STATUS,
 * RESTARTS, AGE; `-o wide` adds IP, NODE, NOMINATED NODE, READINESS GATES),
 * its STATUS and RESTARTS rules (kubectl's `printPod`), its age format, and
 * its tab-writer layout. A column whose fields a field mask removed prints
 * `-`: a missing field is unknown, not zero.
 *
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

function objects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

function obj(value: JsonValue | undefined): JsonObject {
  return isJsonObject(value) ? value : {};
}

function text(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

function num(value: JsonValue | undefined): number {
  return typeof value === "number" ? value : 0;
}

/**
 * Formats a duration as kubectl's AGE column does (apimachinery's `HumanDuration`).
 *
 * @example Usage
 * ```ts
 * import { formatAge } from "./pod_table.ts";
 * formatAge(45_000); // "45s"
 * formatAge(3 * 3600_000 + 5 * 60_000); // "3h5m"
 * ```
 *
 * @param ms Elapsed milliseconds.
 * @returns The short form.
 */
export function formatAge(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    return hours % 24 === 0 ? `${hours / 24}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8) {
    return days % 365 === 0 ? `${days / 365}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  }
  return `${Math.floor(days / 365)}y`;
}

function since(timestamp: string, now: number): string {
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? "<unknown>" : formatAge(now - t);
}

/** The STATUS, READY and RESTARTS cells, computed together as kubectl's printPod does. */
interface PodCounts {
  reason: string;
  ready: number;
  total: number;
  restarts: number;
  lastRestart: number;
}

function isRestartable(container: JsonObject | undefined): boolean {
  return container !== undefined && container.restartPolicy === "Always";
}

function terminatedReason(terminated: JsonObject, prefix: string): string {
  if (text(terminated.reason) !== "") return prefix + text(terminated.reason);
  if (num(terminated.signal) !== 0) return `${prefix}Signal:${num(terminated.signal)}`;
  return `${prefix}ExitCode:${num(terminated.exitCode)}`;
}

function finishedAt(status: JsonObject): number {
  const t = Date.parse(text(obj(obj(status.lastState).terminated).finishedAt));
  return Number.isNaN(t) ? 0 : t;
}

function podCounts(pod: PodObject): PodCounts {
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  const phase = text(status.phase);
  let reason = text(status.reason) || phase;
  const conditions = objects(status.conditions);
  for (const c of conditions) {
    if (c.type === "PodScheduled" && c.reason === "SchedulingGated") reason = "SchedulingGated";
  }
  const initSpecs = new Map<string, JsonObject>();
  let total = objects(spec.containers).length;
  const initContainers = objects(spec.initContainers);
  for (const c of initContainers) {
    initSpecs.set(text(c.name), c);
    if (isRestartable(c)) total++;
  }
  let ready = 0;
  let restarts = 0;
  let lastRestart = 0;
  let sidecarRestarts = 0;
  let sidecarLastRestart = 0;
  let initializing = false;
  const initStatuses = objects(status.initContainerStatuses);
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i]!;
    const state = obj(cs.state);
    restarts += num(cs.restartCount);
    lastRestart = Math.max(lastRestart, finishedAt(cs));
    const sidecar = isRestartable(initSpecs.get(text(cs.name)));
    if (sidecar) {
      sidecarRestarts += num(cs.restartCount);
      sidecarLastRestart = Math.max(sidecarLastRestart, finishedAt(cs));
    }
    if (isJsonObject(state.terminated) && num(state.terminated.exitCode) === 0) continue;
    if (sidecar && cs.started === true) {
      if (cs.ready === true) ready++;
      continue;
    }
    if (isJsonObject(state.terminated)) reason = terminatedReason(state.terminated, "Init:");
    else if (
      isJsonObject(state.waiting) && text(state.waiting.reason) !== "" &&
      state.waiting.reason !== "PodInitializing"
    ) {
      reason = `Init:${text(state.waiting.reason)}`;
    } else reason = `Init:${i}/${initContainers.length}`;
    initializing = true;
    break;
  }
  const initialized = conditions.some((c) => c.type === "Initialized" && c.status === "True");
  if (!initializing || initialized) {
    restarts = sidecarRestarts;
    lastRestart = sidecarLastRestart;
    let hasRunning = false;
    const statuses = objects(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i]!;
      const state = obj(cs.state);
      restarts += num(cs.restartCount);
      lastRestart = Math.max(lastRestart, finishedAt(cs));
      if (isJsonObject(state.waiting) && text(state.waiting.reason) !== "") {
        reason = text(state.waiting.reason);
      } else if (isJsonObject(state.terminated)) {
        reason = terminatedReason(state.terminated, "");
      } else if (cs.ready === true && isJsonObject(state.running)) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === "Completed" && hasRunning) {
      reason = conditions.some((c) => c.type === "Ready" && c.status === "True")
        ? "Running"
        : "NotReady";
    }
  }
  if (pod.metadata.deletionTimestamp !== undefined) {
    if (text(status.reason) === "NodeLost") reason = "Unknown";
    else if (phase !== "Succeeded" && phase !== "Failed") reason = "Terminating";
  }
  return { reason, ready, total, restarts, lastRestart };
}

/**
 * The STATUS column, by kubectl's rules (`Init:1/2`, `CrashLoopBackOff`,
 * `Completed`, `Terminating`...).
 *
 * @param pod A pod.
 * @returns The status text.
 */
export function podStatusText(pod: PodObject): string {
  return podCounts(pod).reason;
}

/** A table column: header, the mask paths it reads, and how to print it. */
export interface PodColumn {
  readonly header: string;
  /** Paths the cell is made of; with a mask that lacks one, the cell is `-`. */
  readonly needs: readonly string[];
  cell(pod: PodObject, now: number): string;
}

const NAMESPACE_COLUMN: PodColumn = {
  header: "NAMESPACE",
  needs: [],
  cell: (pod) => pod.metadata.namespace,
};

const BASE_COLUMNS: readonly PodColumn[] = [
  { header: "NAME", needs: [], cell: (pod) => pod.metadata.name },
  {
    header: "READY",
    needs: ["spec.containers", "status.containerStatuses.ready", "status.containerStatuses.state"],
    cell: (pod) => {
      const c = podCounts(pod);
      return `${c.ready}/${c.total}`;
    },
  },
  { header: "STATUS", needs: ["status.phase"], cell: (pod) => podCounts(pod).reason || "-" },
  {
    header: "RESTARTS",
    needs: ["status.containerStatuses.restartCount"],
    cell: (pod, now) => {
      const c = podCounts(pod);
      return c.restarts !== 0 && c.lastRestart !== 0
        ? `${c.restarts} (${formatAge(now - c.lastRestart)} ago)`
        : String(c.restarts);
    },
  },
  {
    header: "AGE",
    needs: ["metadata.creationTimestamp"],
    cell: (pod, now) => since(pod.metadata.creationTimestamp ?? "", now),
  },
];

const WIDE_COLUMNS: readonly PodColumn[] = [
  {
    header: "IP",
    needs: ["status.podIPs"],
    cell: (pod) => {
      const status = obj(pod.status);
      return text(obj(objects(status.podIPs)[0]).ip) || text(status.podIP) || "<none>";
    },
  },
  {
    header: "NODE",
    needs: ["spec.nodeName"],
    cell: (pod) => text(obj(pod.spec).nodeName) || "<none>",
  },
  {
    header: "NOMINATED NODE",
    needs: ["status.nominatedNodeName"],
    cell: (pod) => text(obj(pod.status).nominatedNodeName) || "<none>",
  },
  {
    header: "READINESS GATES",
    needs: ["spec.readinessGates", "status.conditions"],
    cell: (pod) => {
      const gates = objects(obj(pod.spec).readinessGates);
      if (gates.length === 0) return "<none>";
      const conditions = objects(obj(pod.status).conditions);
      const ready =
        gates.filter((g) => conditions.find((c) => c.type === g.conditionType)?.status === "True")
          .length;
      return `${ready}/${gates.length}`;
    },
  },
];

/** Options of {@linkcode podColumns}. */
export interface PodColumnOptions {
  /** Print the NAMESPACE column first (all namespaces). */
  namespace?: boolean;
  /** `-o wide`. */
  wide?: boolean;
  /** `--show-labels`. */
  showLabels?: boolean;
  /** `-L key`: one column per label key. */
  labelColumns?: readonly string[];
}

function labelMap(pod: PodObject): Record<string, string> {
  return isJsonObject(pod.metadata.labels) ? pod.metadata.labels as Record<string, string> : {};
}

/**
 * The columns of a pod table.
 *
 * @param options Namespace, wide, labels.
 * @returns The columns, in order.
 */
export function podColumns(options: PodColumnOptions = {}): PodColumn[] {
  const columns = [
    ...(options.namespace ? [NAMESPACE_COLUMN] : []),
    ...BASE_COLUMNS,
    ...(options.wide ? WIDE_COLUMNS : []),
  ];
  for (const key of options.labelColumns ?? []) {
    columns.push({
      header: (key.split("/").pop() ?? key).toUpperCase(),
      needs: ["metadata.labels"],
      cell: (pod) => labelMap(pod)[key] ?? "",
    });
  }
  if (options.showLabels) {
    columns.push({
      header: "LABELS",
      needs: ["metadata.labels"],
      cell: (pod) => {
        const labels = Object.entries(labelMap(pod)).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
        return labels.length === 0 ? "<none>" : labels.map(([k, v]) => `${k}=${v}`).join(",");
      },
    });
  }
  return columns;
}

/**
 * Whether a field mask keeps `path`: no mask keeps everything, and a mask
 * path keeps everything under it (`status` keeps `status.phase`).
 *
 * @param mask The mask paths; empty: no mask.
 * @param path A dotted path.
 * @returns `true` when the pod still carries `path`.
 */
export function maskKeeps(mask: readonly string[], path: string): boolean {
  if (mask.length === 0) return true;
  return mask.some((p) => path === p || path.startsWith(p + ".") || p.startsWith(path + "."));
}

/**
 * One row of cells for a pod; a cell whose fields the mask removed is `-`.
 *
 * @param pod A pod.
 * @param columns The columns.
 * @param now Current time, ms since the epoch.
 * @param mask The field mask the pod came through; empty: none.
 * @returns The cells.
 */
export function podRow(
  pod: PodObject,
  columns: readonly PodColumn[],
  now: number,
  mask: readonly string[] = [],
): string[] {
  return columns.map((c) =>
    c.needs.every((path) => maskKeepsLeaf(mask, path)) ? c.cell(pod, now) : "-"
  );
}

/** A cell needs its whole path kept: a mask only below it (`status.phase` for `status`) is not enough. */
function maskKeepsLeaf(mask: readonly string[], path: string): boolean {
  if (mask.length === 0) return true;
  if (path === "spec.containers") return maskKeeps(mask, path);
  if (path === "status.podIPs") {
    return mask.some((p) =>
      ["status", "status.podIPs", "status.podIP"].includes(p) || p.startsWith("status.podIPs.")
    );
  }
  return mask.some((p) => path === p || path.startsWith(p + "."));
}

/**
 * Lays rows out as kubectl's tab writer does: each column as wide as its
 * widest cell plus three spaces, the last one unpadded.
 *
 * @param rows Rows, the header first.
 * @returns The lines.
 */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  }
  return rows.map((row) => padRow(row, widths));
}

/**
 * Pads one row to given column widths.
 *
 * @param row The cells.
 * @param widths Each column's width (without the three-space gap).
 * @returns The line.
 */
export function padRow(row: readonly string[], widths: readonly number[]): string {
  return row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + 3))
    .join("").trimEnd();
}
