/**
 * Pods as `kubectl get pods` prints them: its columns (NAME, READY, STATUS,
 * RESTARTS, AGE; `-o wide` adds IP, NODE, NOMINATED NODE, READINESS GATES),
 * its STATUS and RESTARTS rules and age format (the HTTP API's `printPod`,
 * shared, so both surfaces print a pod alike), and its tab-writer layout. A
 * column whose fields a field mask removed prints `-`: a missing field is
 * unknown, not zero.
 *
 * @module
 */

import { printPod } from "../kubeapi/mod.ts";
import { isJsonObject } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

/** printPod's cells: NAME, READY, STATUS, RESTARTS, AGE, IP, NODE, NOMINATED NODE, READINESS GATES. */
const CELL = {
  name: 0,
  ready: 1,
  status: 2,
  restarts: 3,
  age: 4,
  ip: 5,
  node: 6,
  nominated: 7,
  gates: 8,
} as const;

/** A table column: header, the mask paths it reads, and how to print it. */
export interface PodColumn {
  readonly header: string;
  /** Paths the cell is made of; with a mask that lacks one, the cell is `-`. */
  readonly needs: readonly string[];
  /**
   * The cell.
   *
   * @param pod The pod.
   * @param printed kubectl's cells of the pod (`printPod`).
   */
  cell(pod: PodObject, printed: readonly string[]): string;
}

const NAMESPACE_COLUMN: PodColumn = {
  header: "NAMESPACE",
  needs: [],
  cell: (pod) => pod.metadata.namespace,
};

function printed(header: string, needs: readonly string[], index: number): PodColumn {
  return { header, needs, cell: (_pod, cells) => cells[index] || "-" };
}

const BASE_COLUMNS: readonly PodColumn[] = [
  printed("NAME", [], CELL.name),
  printed(
    "READY",
    ["spec.containers", "status.containerStatuses.ready", "status.containerStatuses.state"],
    CELL.ready,
  ),
  printed("STATUS", ["status.phase"], CELL.status),
  printed("RESTARTS", ["status.containerStatuses.restartCount"], CELL.restarts),
  printed("AGE", ["metadata.creationTimestamp"], CELL.age),
];

const WIDE_COLUMNS: readonly PodColumn[] = [
  printed("IP", ["status.podIPs"], CELL.ip),
  printed("NODE", ["spec.nodeName"], CELL.node),
  printed("NOMINATED NODE", ["status.nominatedNodeName"], CELL.nominated),
  printed("READINESS GATES", ["spec.readinessGates", "status.conditions"], CELL.gates),
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
  const cells = printPod(pod, now).cells;
  return columns.map((c) =>
    c.needs.every((path) => maskKeepsLeaf(mask, path)) ? c.cell(pod, cells) : "-"
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
