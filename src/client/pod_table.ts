/**
 * Pods as `kubectl get pods -o wide` shows them: NAMESPACE, NAME, READY,
 * STATUS, RESTARTS, AGE, IP, NODE.
 *
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

/** Column headers of the table. */
export const POD_TABLE_HEADER = [
  "NAMESPACE",
  "NAME",
  "READY",
  "STATUS",
  "RESTARTS",
  "AGE",
  "IP",
  "NODE",
];

function objects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

function obj(value: JsonValue | undefined): JsonObject {
  return isJsonObject(value) ? value : {};
}

function text(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

/**
 * Formats an age as kubectl does (`45s`, `3m12s`, `5h`, `2d`).
 *
 * @param ms Elapsed milliseconds.
 * @returns The short form.
 */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ""}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/**
 * The STATUS column: the phase, or the reason a container is waiting or
 * terminated, or `Terminating` (kubectl's rules, simplified).
 *
 * @param pod A pod.
 * @returns The status word.
 */
export function podStatusWord(pod: PodObject): string {
  const status = obj(pod.status);
  let word = text(status.reason) || text(status.phase) || "Unknown";
  for (const cs of objects(status.initContainerStatuses)) {
    const state = obj(cs.state);
    const terminated = obj(state.terminated);
    if (isJsonObject(state.terminated) && terminated.exitCode === 0) continue;
    if (isJsonObject(state.terminated)) word = `Init:${text(terminated.reason) || "Error"}`;
    else if (
      text(obj(state.waiting).reason) && text(obj(state.waiting).reason) !== "PodInitializing"
    ) {
      word = `Init:${text(obj(state.waiting).reason)}`;
    } else continue;
    return word;
  }
  for (const cs of objects(status.containerStatuses)) {
    const state = obj(cs.state);
    const waiting = text(obj(state.waiting).reason);
    const terminated = obj(state.terminated);
    if (waiting) word = waiting;
    else if (isJsonObject(state.terminated)) {
      word = text(terminated.reason) || `ExitCode:${terminated.exitCode}`;
    }
  }
  if (pod.metadata.deletionTimestamp) word = "Terminating";
  return word;
}

/**
 * One table row for a pod.
 *
 * @param pod A pod.
 * @param now Current time, ms since the epoch.
 * @returns The cells, in {@linkcode POD_TABLE_HEADER} order.
 */
export function podRow(pod: PodObject, now: number): string[] {
  const status = obj(pod.status);
  const statuses = objects(status.containerStatuses);
  const total = objects(obj(pod.spec).containers).length || statuses.length;
  const ready = statuses.filter((cs) => cs.ready === true).length;
  const restarts = statuses.reduce(
    (n, cs) => n + (typeof cs.restartCount === "number" ? cs.restartCount : 0),
    0,
  );
  const created = Date.parse(pod.metadata.creationTimestamp ?? "");
  return [
    pod.metadata.namespace,
    pod.metadata.name,
    `${ready}/${total}`,
    podStatusWord(pod),
    String(restarts),
    Number.isNaN(created) ? "<unknown>" : formatAge(now - created),
    text(status.podIP) || "<none>",
    text(obj(pod.spec).nodeName) || "<none>",
  ];
}

/**
 * Lays rows out in aligned columns.
 *
 * @param rows Rows, the header first.
 * @returns The lines.
 */
export function alignColumns(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  }
  return rows.map((row) =>
    row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i]! + 3)).join("")
  );
}
