/**
 * What a CRI runtime holds for one simulated pod, as the kubelet would have
 * made it: the sandbox (identity, labels, IP, ready or not) and, per
 * container, the instances still kept (the current one and the one before
 * it) with their states, exit codes and times. Pure: `v1.Pod` JSON in,
 * plain data out; `sim_cri_bridge.ts` applies it to a {@linkcode SimCriRuntime}.
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import { POD_PHASE, type PodObject } from "../../model/pod.ts";
import { KUBELET_ANNOTATION } from "../../model/kubelet_keys.ts";
import type { KubeletContainerSpec, KubeletPodSpec } from "./cri_kubelet.ts";
import { hashString } from "../_prng.ts";

/** A container instance's CRI state. */
export type InstanceState = "created" | "running" | "exited";

/** One container instance (one CRI container) as it should be. */
export interface DesiredInstance {
  /** `metadata.attempt`, which is also the restart count it carries. */
  readonly attempt: number;
  readonly state: InstanceState;
  /** Nanoseconds since the epoch. */
  readonly createdAt: number;
  /** Nanoseconds; 0 while created. */
  readonly startedAt: number;
  /** Nanoseconds; 0 unless exited. */
  readonly finishedAt: number;
  readonly exitCode: number;
  readonly reason: string;
  readonly message: string;
  /** The container ID the pod's status shows (without the runtime prefix), kept by the runtime. */
  readonly id?: string;
}

/** One spec container and the instances it should have. */
export interface DesiredContainer {
  readonly name: string;
  readonly spec: KubeletContainerSpec;
  /** Annotations to set over the ones `kubeletContainerConfig` writes. */
  readonly annotations: Readonly<Record<string, string>>;
  /**
   * The newest instance, or `undefined` when the pod's status does not list
   * the container (nothing to create yet).
   */
  readonly newest: DesiredInstance | undefined;
  /** The instance before it, when the pod's status knows it (`lastState`). */
  readonly previous: DesiredInstance | undefined;
}

/**
 * A sandbox's life: `pending` while the pod waits for its network (NOTREADY,
 * no IP yet), `ready` once it has it (READY), `stopped` once the pod finished
 * (NOTREADY: the kubelet stopped it).
 */
export type SandboxPhase = "pending" | "ready" | "stopped";

/** The runtime's view of one pod. */
export interface DesiredPod {
  readonly uid: string;
  readonly pod: KubeletPodSpec;
  /** `spec.hostPID` (the kubelet's PID namespace mode NODE). */
  readonly hostPID: boolean;
  /** `spec.hostIPC` (IPC namespace mode NODE). */
  readonly hostIPC: boolean;
  readonly sandbox: SandboxPhase;
  /** The sandbox's IP, `""` while none (pending, host network). */
  readonly ip: string;
  /** Nanoseconds: the pod's creation time. */
  readonly createdAt: number;
  /** Init containers in spec order, then regular ones. */
  readonly containers: readonly DesiredContainer[];
}

/** Where pod logs would live (only a path in CRI; nothing is written). */
const LOG_ROOT = "/var/log/pods";

/** Nanoseconds per millisecond. */
const NS_PER_MS = 1e6;

/**
 * Offset between containers' creation times, so that the runtime's creation
 * order is the spec order (CRI orders init containers by it).
 */
const ORDER_STEP_NS = 1000;

function obj(value: unknown): JsonObject | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as JsonObject
    : undefined;
}

function list(value: unknown): JsonObject[] {
  return Array.isArray(value) ? value.filter((v) => obj(v) !== undefined) as JsonObject[] : [];
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj(value) ?? {})) if (typeof v === "string") out[k] = v;
  return out;
}

/** An RFC 3339 time as nanoseconds, or 0 when absent or malformed. */
function ns(value: unknown): number {
  const ms = typeof value === "string" ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? ms * NS_PER_MS : 0;
}

const QUANTITY_REGEXP = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/;
const QUANTITY_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
};

/** A memory quantity (`512Mi`, `1G`, `1048576`) in bytes, or `undefined`. */
function memoryBytes(value: unknown): number | undefined {
  const match = typeof value === "string" ? QUANTITY_REGEXP.exec(value) : null;
  if (match === null) return undefined;
  return Math.ceil(Number(match[1]) * QUANTITY_UNITS[match[2] ?? ""]!);
}

function containerSpec(c: JsonObject, type: "init" | "container"): KubeletContainerSpec {
  const spec: KubeletContainerSpec = {
    name: str(c.name) ?? "",
    image: str(c.image) ?? "",
    type,
  };
  const command = c.command;
  if (Array.isArray(command)) spec.command = command.map(String);
  const args = c.args;
  if (Array.isArray(args)) spec.args = args.map(String);
  const limit = memoryBytes(obj(obj(c.resources)?.limits)?.memory);
  if (limit !== undefined) spec.memoryLimitBytes = limit;
  return spec;
}

/**
 * The container annotations the kubelet derives from the spec container:
 * a hash of the container spec, the ports as JSON, the termination message
 * path and policy.
 */
function containerAnnotations(c: JsonObject): Record<string, string> {
  const out: Record<string, string> = {
    [KUBELET_ANNOTATION.containerHash]: hashString(JSON.stringify(c)).toString(16),
    [KUBELET_ANNOTATION.terminationMessagePath]: str(c.terminationMessagePath) ??
      "/dev/termination-log",
    [KUBELET_ANNOTATION.terminationMessagePolicy]: str(c.terminationMessagePolicy) ?? "File",
  };
  const ports = list(c.ports).map((p) => ({ ...p, protocol: str(p.protocol) ?? "TCP" }));
  if (ports.length > 0) out[KUBELET_ANNOTATION.ports] = JSON.stringify(ports);
  return out;
}

function bareId(value: unknown): { id?: string } {
  const text = str(value);
  if (text === undefined || text === "") return {};
  const at = text.indexOf("://");
  return { id: at < 0 ? text : text.slice(at + 3) };
}

function terminatedInstance(
  t: JsonObject,
  attempt: number,
  createdAt: number,
): DesiredInstance {
  const startedAt = ns(t.startedAt) || createdAt;
  const exitCode = typeof t.exitCode === "number" ? t.exitCode : 0;
  return {
    ...bareId(t.containerID),
    attempt,
    state: "exited",
    createdAt: startedAt,
    startedAt,
    finishedAt: ns(t.finishedAt) || startedAt,
    exitCode,
    reason: str(t.reason) ?? (exitCode === 0 ? "Completed" : "Error"),
    message: str(t.message) ?? "",
  };
}

/**
 * The instances one container status stands for. Running or terminated: the
 * current instance (attempt = restart count), and the previous one from
 * `lastState`. Waiting in back-off: the instance that died (in `lastState`)
 * is the newest the runtime holds; CRI knows no back-off. Waiting otherwise:
 * a created, not yet started, instance.
 */
function instancesOf(
  status: JsonObject | undefined,
  podCreatedAt: number,
  order: number,
): { newest: DesiredInstance | undefined; previous: DesiredInstance | undefined } {
  if (status === undefined) return { newest: undefined, previous: undefined };
  const restarts = typeof status.restartCount === "number" ? status.restartCount : 0;
  const state = obj(status.state) ?? {};
  const last = obj(obj(status.lastState)?.terminated);
  const offset = order * ORDER_STEP_NS;
  const running = obj(state.running);
  const terminated = obj(state.terminated);
  if (running !== undefined || terminated !== undefined) {
    let newest: DesiredInstance;
    if (terminated !== undefined) {
      const t = terminatedInstance(terminated, restarts, podCreatedAt);
      newest = { ...bareId(status.containerID), ...t, createdAt: t.createdAt + offset };
    } else {
      const startedAt = ns(running!.startedAt) || podCreatedAt;
      newest = {
        ...bareId(status.containerID),
        attempt: restarts,
        state: "running",
        createdAt: startedAt + offset,
        startedAt,
        finishedAt: 0,
        exitCode: 0,
        reason: "",
        message: "",
      };
    }
    const previous = last !== undefined && restarts > 0
      ? terminatedInstance(last, restarts - 1, podCreatedAt)
      : undefined;
    return { newest, previous };
  }
  if (last !== undefined) {
    const t = terminatedInstance(last, restarts, podCreatedAt);
    return { newest: { ...t, createdAt: t.createdAt + offset }, previous: undefined };
  }
  return {
    newest: {
      attempt: restarts,
      state: "created",
      createdAt: podCreatedAt + offset,
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: "",
      message: "",
    },
    previous: undefined,
  };
}

function statusesByName(value: unknown): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  for (const s of list(value)) {
    const name = str(s.name);
    if (name !== undefined) out.set(name, s);
  }
  return out;
}

/**
 * Describes what the runtime should hold for a simulated pod.
 *
 * @param pod A `v1.Pod` from {@linkcode SimulatedNode.pods}.
 * @returns The sandbox and container instances.
 */
export function desiredPod(pod: PodObject): DesiredPod {
  const { metadata } = pod;
  const spec = pod.spec ?? {};
  const status = pod.status ?? {};
  const hostNetwork = spec.hostNetwork === true;
  const grace = spec.terminationGracePeriodSeconds;
  const kubeletPod: KubeletPodSpec = {
    name: metadata.name,
    namespace: metadata.namespace,
    uid: metadata.uid,
    labels: stringMap(metadata.labels),
    annotations: stringMap(metadata.annotations),
    hostNetwork,
    logRoot: LOG_ROOT,
  };
  if (typeof grace === "number") kubeletPod.terminationGracePeriodSeconds = grace;
  const createdAt = ns(metadata.creationTimestamp) || ns(status.startTime);
  const phase = status.phase;
  const networkReady = list(status.conditions).some((c) =>
    c.type === "PodReadyToStartContainers" && c.status === "True"
  );
  const sandbox: SandboxPhase = phase === POD_PHASE.succeeded || phase === POD_PHASE.failed
    ? "stopped"
    : networkReady
    ? "ready"
    : "pending";
  const initStatuses = statusesByName(status.initContainerStatuses);
  const statuses = statusesByName(status.containerStatuses);
  const containers: DesiredContainer[] = [];
  const add = (c: JsonObject, type: "init" | "container", byName: Map<string, JsonObject>) => {
    const name = str(c.name);
    if (name === undefined) return;
    containers.push({
      name,
      spec: containerSpec(c, type),
      annotations: containerAnnotations(c),
      ...instancesOf(byName.get(name), createdAt, containers.length),
    });
  };
  for (const c of list(spec.initContainers)) add(c, "init", initStatuses);
  for (const c of list(spec.containers)) add(c, "container", statuses);
  return {
    uid: metadata.uid,
    pod: kubeletPod,
    hostPID: spec.hostPID === true,
    hostIPC: spec.hostIPC === true,
    sandbox,
    ip: hostNetwork ? "" : str(status.podIP) ?? "",
    createdAt,
    containers,
  };
}
