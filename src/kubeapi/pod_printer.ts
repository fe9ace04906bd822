/**
 * The pod columns of `kubectl get pods` (the API server's server-side
 * printer, which kubectl shows): NAME, READY, STATUS, RESTARTS, AGE, and
 * with `-o wide` IP, NODE, NOMINATED NODE, READINESS GATES. STATUS is the
 * reason kubectl shows (`CrashLoopBackOff`, `Init:0/1`, `OOMKilled`,
 * `Terminating`, ...), computed by the printer's rules.
 *
 * @module
 */

import {
  isJsonObject,
  type JsonObject,
  type JsonValue,
  objectOf,
  objectsOf,
  stringOf,
} from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import { isTerminalPhase } from "../status/mod.ts";

/** A `meta.k8s.io/v1` `TableColumnDefinition`. */
export interface TableColumn {
  readonly name: string;
  readonly type: "string";
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

/** The pod columns, in order; priority 1 columns show with `-o wide`. */
export const POD_COLUMNS: readonly TableColumn[] = Object.freeze([
  col("Name", 0, "Name of the pod, unique within its namespace.", "name"),
  col("Ready", 0, "Ready containers out of all containers (sidecars included)."),
  col("Status", 0, "The pod's state as a person reads it: phase or the reason behind it."),
  col("Restarts", 0, "Container restarts, and how long ago the last one was."),
  col("Age", 0, "Time since the pod was created."),
  col("IP", 1, "The pod's first IP address."),
  col("Node", 1, "The node the pod is bound to."),
  col("Nominated Node", 1, "The node a preempting pod is nominated to."),
  col("Readiness Gates", 1, "Readiness gate conditions that are true, out of all gates."),
]);

function col(name: string, priority: number, description: string, format = ""): TableColumn {
  return Object.freeze({ name, type: "string", format, description, priority });
}

function num(value: JsonValue | undefined): number {
  return typeof value === "number" ? value : 0;
}

/**
 * Formats a duration as Go's `duration.HumanDuration` (kubectl's AGE).
 *
 * @param ms Elapsed milliseconds.
 * @returns `45s`, `3m12s`, `5h10m`, `2d3h`, `1y20d`, ...
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24) % 365;
    const years = Math.floor(hours / 24 / 365);
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

function since(timestamp: string, now: number): string {
  const t = Date.parse(timestamp);
  return timestamp === "" || Number.isNaN(t) ? "<unknown>" : humanDuration(now - t);
}

function isRestartable(container: JsonObject | undefined): boolean {
  return container !== undefined && container.restartPolicy === "Always";
}

function finishedAt(status: JsonObject): string {
  return stringOf(objectOf(objectOf(status.lastState).terminated).finishedAt);
}

/** RFC 3339 strings of one format compare as times; "" is the zero time. */
function later(a: string, b: string): string {
  if (a === "") return b;
  if (b === "") return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}

/** A row of a `Table` and its conditions. */
export interface PodRow {
  readonly cells: readonly string[];
  /** `Completed` for pods in a terminal phase, as the printer marks them. */
  readonly conditions?: readonly JsonObject[];
}

/**
 * Prints one pod as the API server's table printer does.
 *
 * @example
 * ```ts
 * printPod(pod, Date.now()).cells; // ["web-1", "1/1", "Running", "0", "5m", "10.1.0.4", ...]
 * ```
 *
 * @param pod The pod.
 * @param now Current time, ms since the epoch.
 * @returns The cells in {@linkcode POD_COLUMNS} order.
 */
export function printPod(pod: Readonly<PodObject>, now: number): PodRow {
  const spec = objectOf(pod.spec);
  const status = objectOf(pod.status);
  const phase = stringOf(status.phase);
  let reason = stringOf(status.reason) || phase;
  const conditions = objectsOf(status.conditions);
  for (const c of conditions) {
    if (c.type === "PodScheduled" && c.reason === "SchedulingGated") reason = "SchedulingGated";
  }
  const containers = objectsOf(spec.containers);
  let total = containers.length;
  let ready = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart = "";
  let lastSidecarRestart = "";
  const initSpecs = new Map<string, JsonObject>();
  const initContainers = objectsOf(spec.initContainers);
  for (const c of initContainers) {
    initSpecs.set(stringOf(c.name), c);
    if (isRestartable(c)) total++;
  }
  let initializing = false;
  const initStatuses = objectsOf(status.initContainerStatuses);
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i]!;
    const state = objectOf(cs.state);
    const terminated = isJsonObject(state.terminated) ? state.terminated : undefined;
    const waiting = objectOf(state.waiting);
    restarts += num(cs.restartCount);
    lastRestart = later(lastRestart, finishedAt(cs));
    const restartable = isRestartable(initSpecs.get(stringOf(cs.name)));
    if (restartable) {
      sidecarRestarts += num(cs.restartCount);
      lastSidecarRestart = later(lastSidecarRestart, finishedAt(cs));
    }
    if (terminated !== undefined && num(terminated.exitCode) === 0) continue;
    if (restartable && cs.started === true) {
      if (cs.ready === true) ready++;
      continue;
    }
    if (terminated !== undefined) {
      const why = stringOf(terminated.reason);
      if (why !== "") reason = `Init:${why}`;
      else if (num(terminated.signal) !== 0) reason = `Init:Signal:${num(terminated.signal)}`;
      else reason = `Init:ExitCode:${num(terminated.exitCode)}`;
    } else if (stringOf(waiting.reason) !== "" && waiting.reason !== "PodInitializing") {
      reason = `Init:${stringOf(waiting.reason)}`;
    } else {
      reason = `Init:${i}/${initContainers.length}`;
    }
    initializing = true;
    break;
  }
  const initialized = conditions.some((c) => c.type === "Initialized" && c.status === "True");
  if (!initializing || initialized) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = objectsOf(status.containerStatuses);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i]!;
      const state = objectOf(cs.state);
      restarts += num(cs.restartCount);
      lastRestart = later(lastRestart, finishedAt(cs));
      const waiting = objectOf(state.waiting);
      const terminated = isJsonObject(state.terminated) ? state.terminated : undefined;
      if (stringOf(waiting.reason) !== "") reason = stringOf(waiting.reason);
      else if (terminated !== undefined && stringOf(terminated.reason) !== "") {
        reason = stringOf(terminated.reason);
      } else if (terminated !== undefined) {
        reason = num(terminated.signal) !== 0
          ? `Signal:${num(terminated.signal)}`
          : `ExitCode:${num(terminated.exitCode)}`;
      } else if (cs.ready === true && isJsonObject(state.running)) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === "Completed" && hasRunning) {
      const podReady = conditions.some((c) => c.type === "Ready" && c.status === "True");
      reason = podReady ? "Running" : "NotReady";
    }
  }
  const deleting = stringOf(pod.metadata.deletionTimestamp) !== "";
  if (deleting && status.reason === "NodeLost") reason = "Unknown";
  else if (deleting && phase !== "Succeeded" && phase !== "Failed") reason = "Terminating";
  const restartText = restarts !== 0 && lastRestart !== ""
    ? `${restarts} (${since(lastRestart, now)} ago)`
    : String(restarts);
  const ips = objectsOf(status.podIPs);
  const podIP = stringOf(ips[0]?.ip) || stringOf(status.podIP);
  let gates = "<none>";
  const readinessGates = objectsOf(spec.readinessGates);
  if (readinessGates.length > 0) {
    let passed = 0;
    for (const gate of readinessGates) {
      const c = conditions.find((c) => c.type === gate.conditionType);
      if (c?.status === "True") passed++;
    }
    gates = `${passed}/${readinessGates.length}`;
  }
  const cells = [
    pod.metadata.name,
    `${ready}/${total}`,
    reason,
    restartText,
    since(stringOf(pod.metadata.creationTimestamp), now),
    podIP || "<none>",
    stringOf(spec.nodeName) || "<none>",
    stringOf(status.nominatedNodeName) || "<none>",
    gates,
  ];
  if (isTerminalPhase(phase)) {
    const message = phase === "Succeeded"
      ? "The pod has completed successfully."
      : "The pod failed.";
    return {
      cells,
      conditions: [{ type: "Completed", status: "True", reason: phase, message }],
    };
  }
  return { cells };
}
