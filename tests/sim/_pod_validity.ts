/**
 * Checks that a pod in its JSON shape is one a kubelet could have reported:
 * well-formed identifiers, quantities, times and statuses consistent with
 * the spec and with the phase. Returns problems instead of throwing so a
 * failing test lists them all.
 *
 * @module
 */

import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";

/** The Kubernetes quantity grammar (`resource.Quantity`). */
export const QUANTITY_REGEXP =
  /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
const RFC3339_SECONDS_REGEXP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const UUID_V4_REGEXP = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DNS_SUBDOMAIN_REGEXP = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const DNS_LABEL_REGEXP = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE_REGEXP = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
/** The simulated runtime's scheme: simulated containers never read as containerd's. */
const CONTAINER_ID_REGEXP = /^pods-api-simulated:\/\/[0-9a-f]{64}$/;
const IMAGE_ID_REGEXP = /^[^@]+@sha256:[0-9a-f]{64}$/;
const TIME_KEYS = new Set([
  "creationTimestamp",
  "deletionTimestamp",
  "startTime",
  "startedAt",
  "finishedAt",
  "lastTransitionTime",
]);
const PHASES = new Set(["Pending", "Running", "Succeeded", "Failed", "Unknown"]);
const CONDITION_TYPES = [
  "PodReadyToStartContainers",
  "Initialized",
  "Ready",
  "ContainersReady",
  "PodScheduled",
];

function obj(value: unknown): JsonObject {
  return (value ?? {}) as JsonObject;
}

function list(value: unknown): JsonObject[] {
  return (value ?? []) as JsonObject[];
}

function isTime(value: unknown): boolean {
  return typeof value === "string" && RFC3339_SECONDS_REGEXP.test(value) &&
    !Number.isNaN(Date.parse(value));
}

function walkTimes(value: unknown, path: string, problems: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => walkTimes(v, `${path}[${i}]`, problems));
    return;
  }
  if (typeof value !== "object" || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    if (TIME_KEYS.has(key) && !isTime(child)) {
      problems.push(`${path}.${key} is not an RFC 3339 time: ${JSON.stringify(child)}`);
    }
    if (key === "lastProbeTime" && child !== null && !isTime(child)) {
      problems.push(`${path}.${key} is not a time or null`);
    }
    walkTimes(child, `${path}.${key}`, problems);
  }
}

function checkQuantities(spec: JsonObject, problems: string[]): void {
  const containers = [...list(spec.initContainers), ...list(spec.containers)];
  for (const c of containers) {
    const res = obj(c.resources);
    for (const kind of ["requests", "limits"]) {
      for (const [name, q] of Object.entries(obj(res[kind]))) {
        if (typeof q !== "string" || !QUANTITY_REGEXP.test(q)) {
          problems.push(`container "${c.name}" ${kind}.${name} is not a quantity: "${q}"`);
        }
      }
    }
  }
  for (const v of list(spec.volumes)) {
    const size = obj(v.emptyDir).sizeLimit;
    if (size !== undefined && (typeof size !== "string" || !QUANTITY_REGEXP.test(size))) {
      problems.push(`volume "${v.name}" sizeLimit is not a quantity: "${size}"`);
    }
  }
}

function stateKind(status: JsonObject): string {
  const keys = Object.keys(obj(status.state));
  return keys.length === 1 ? keys[0]! : `invalid(${keys.join(",")})`;
}

function checkContainerStatus(s: JsonObject, where: string, problems: string[]): void {
  const state = obj(s.state);
  const kind = stateKind(s);
  if (kind === "waiting") {
    if (typeof obj(state.waiting).reason !== "string") {
      problems.push(`${where} waiting has no reason`);
    }
  } else if (kind === "running") {
    if (!isTime(obj(state.running).startedAt)) problems.push(`${where} running has no startedAt`);
  } else if (kind === "terminated") {
    checkTerminated(obj(state.terminated), `${where} terminated`, problems);
  } else problems.push(`${where} has state ${kind}`);
  const last = obj(s.lastState);
  if (Object.keys(last).length > 0) {
    if (Object.keys(last).length !== 1 || last.terminated === undefined) {
      problems.push(`${where} lastState is not a termination`);
    } else checkTerminated(obj(last.terminated), `${where} lastState`, problems);
  }
  if (!Number.isInteger(s.restartCount) || (s.restartCount as number) < 0) {
    problems.push(`${where} restartCount is invalid`);
  }
  if (typeof s.ready !== "boolean" || typeof s.started !== "boolean") {
    problems.push(`${where} ready/started are not booleans`);
  }
  if (s.containerID !== undefined && !CONTAINER_ID_REGEXP.test(String(s.containerID))) {
    problems.push(`${where} containerID is malformed: ${s.containerID}`);
  }
  const created = kind !== "waiting" || Object.keys(last).length > 0;
  if (created !== (s.containerID !== undefined)) {
    problems.push(`${where} containerID presence does not match its state`);
  }
  if (created && !IMAGE_ID_REGEXP.test(String(s.imageID))) {
    problems.push(`${where} imageID is malformed: ${s.imageID}`);
  }
  if (kind === "running" && s.started !== true) problems.push(`${where} runs but is not started`);
  if (kind !== "running" && s.ready === true && kind !== "terminated") {
    problems.push(`${where} is ready but not running`);
  }
}

function checkTerminated(t: JsonObject, where: string, problems: string[]): void {
  if (!Number.isInteger(t.exitCode)) problems.push(`${where} has no exitCode`);
  const reason = t.reason;
  if (reason !== "Completed" && reason !== "Error" && reason !== "OOMKilled") {
    problems.push(`${where} has reason ${reason}`);
  }
  if ((reason === "Completed") !== (t.exitCode === 0)) {
    problems.push(`${where} reason ${reason} does not match exit code ${t.exitCode}`);
  }
  if (!isTime(t.startedAt) || !isTime(t.finishedAt)) problems.push(`${where} lacks times`);
  else if (Date.parse(t.startedAt as string) > Date.parse(t.finishedAt as string)) {
    problems.push(`${where} finished before it started`);
  }
  if (!CONTAINER_ID_REGEXP.test(String(t.containerID))) problems.push(`${where} lacks containerID`);
}

function checkStatusesMatchSpec(
  specContainers: JsonObject[],
  statuses: JsonObject[],
  what: string,
  problems: string[],
): void {
  const specNames = specContainers.map((c) => c.name).sort();
  const statusNames = statuses.map((s) => s.name).sort();
  if (JSON.stringify(specNames) !== JSON.stringify(statusNames)) {
    problems.push(`${what} statuses ${statusNames} do not match spec ${specNames}`);
    return;
  }
  const images = new Map(specContainers.map((c) => [c.name, c.image]));
  for (const s of statuses) {
    if (s.image !== images.get(s.name)) {
      problems.push(`${what} "${s.name}" image differs from spec`);
    }
    checkContainerStatus(s, `${what} "${s.name}"`, problems);
  }
}

/** Phase implied by the container states (independent of the simulator's own code). */
function phaseConsistency(
  phase: string,
  restartPolicy: string,
  statuses: JsonObject[],
  problems: string[],
): void {
  const kinds = statuses.map(stateKind);
  const crashLooping = statuses.filter((s) =>
    obj(obj(s.state).waiting).reason === "CrashLoopBackOff"
  );
  const creating = statuses.filter((s) =>
    stateKind(s) === "waiting" && Object.keys(obj(s.lastState)).length === 0
  );
  switch (phase) {
    case "Pending":
      if (creating.length === 0) problems.push("Pending pod has no container being created");
      break;
    case "Running":
      if (!kinds.includes("running") && (crashLooping.length === 0 || restartPolicy === "Never")) {
        problems.push("Running pod has neither a running nor a restarting container");
      }
      if (creating.length > 0) problems.push("Running pod has a container still being created");
      break;
    case "Succeeded":
      if (!statuses.every((s) => obj(obj(s.state).terminated).exitCode === 0)) {
        problems.push("Succeeded pod has a container not terminated with exit code 0");
      }
      break;
    case "Failed":
      if (!kinds.every((k) => k === "terminated")) {
        problems.push("Failed pod has a container not terminated");
      }
      if (statuses.every((s) => obj(obj(s.state).terminated).exitCode === 0)) {
        problems.push("Failed pod has no failed container");
      }
      if (restartPolicy === "Always") problems.push("Failed pod has restartPolicy Always");
      break;
  }
  if (crashLooping.length > 0 && restartPolicy === "Never") {
    problems.push("restartPolicy Never pod is crash looping");
  }
}

function checkConditions(pod: PodObject, problems: string[]): void {
  const status = obj(pod.status);
  const conditions = list(status.conditions);
  const types = conditions.map((c) => c.type);
  if (JSON.stringify(types) !== JSON.stringify(CONDITION_TYPES)) {
    problems.push(`conditions are ${types}`);
    return;
  }
  const byType = new Map(conditions.map((c) => [c.type as string, c]));
  for (const c of conditions) {
    if (c.status !== "True" && c.status !== "False") problems.push(`condition ${c.type} status`);
  }
  const phase = status.phase;
  const statuses = list(status.containerStatuses);
  const allReady = statuses.every((s) => s.ready === true);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const ready = byType.get("Ready")!.status === "True";
  if (ready !== (allReady && !terminal)) problems.push("Ready condition disagrees with containers");
  if (byType.get("ContainersReady")!.status !== byType.get("Ready")!.status) {
    problems.push("Ready and ContainersReady disagree");
  }
  const sandbox = byType.get("PodReadyToStartContainers")!.status === "True";
  if (phase === "Running" && !sandbox) problems.push("Running pod without a ready sandbox");
  if (terminal && sandbox) problems.push("terminal pod with a ready sandbox");
  if (sandbox !== (status.podIP !== undefined) && !terminal) {
    problems.push("sandbox readiness disagrees with pod IP");
  }
  if (byType.get("PodScheduled")!.status !== "True") problems.push("pod not scheduled");
}

/**
 * Lists what is wrong with a pod.
 *
 * @param pod A pod in its JSON shape.
 * @param options The node's name and IP.
 * @returns Problems, each a sentence naming the pod; empty when valid.
 */
export function podProblems(
  pod: PodObject,
  options: { nodeName: string; hostIP: string },
): string[] {
  const problems: string[] = [];
  const meta = pod.metadata;
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  const configHash = meta.annotations?.["kubernetes.io/config.hash"];
  if (configHash !== undefined) {
    // A static pod: the kubelet makes its UID the config hash.
    if (meta.uid !== configHash) problems.push(`uid "${meta.uid}" is not its config hash`);
    if (!/^[0-9a-f]{32}$/.test(configHash)) problems.push("config hash is not 32 hex digits");
  } else if (!UUID_V4_REGEXP.test(meta.uid)) problems.push(`uid "${meta.uid}" is not a v4 UUID`);
  if (!DNS_SUBDOMAIN_REGEXP.test(meta.name)) problems.push("name is not a DNS subdomain");
  if (!DNS_LABEL_REGEXP.test(meta.namespace)) problems.push("namespace is not a DNS label");
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    if (!LABEL_VALUE_REGEXP.test(v) || v.length > 63) problems.push(`label ${k}=${v} is invalid`);
  }
  if (!isTime(meta.creationTimestamp)) problems.push("creationTimestamp missing");
  walkTimes(pod, "pod", problems);
  checkQuantities(spec, problems);
  if (spec.nodeName !== options.nodeName) problems.push("spec.nodeName is not the node");
  const phase = status.phase;
  if (typeof phase !== "string" || !PHASES.has(phase)) problems.push(`phase "${phase}" is invalid`);
  checkStatusesMatchSpec(
    list(spec.containers),
    list(status.containerStatuses),
    "container",
    problems,
  );
  checkStatusesMatchSpec(
    list(spec.initContainers),
    list(status.initContainerStatuses),
    "init container",
    problems,
  );
  phaseConsistency(
    String(phase),
    String(spec.restartPolicy),
    list(status.containerStatuses),
    problems,
  );
  checkConditions(pod, problems);
  if (status.hostIP !== options.hostIP) problems.push("hostIP is not the node's");
  if (obj(list(status.hostIPs)[0]).ip !== options.hostIP) problems.push("hostIPs mismatch");
  if (status.podIP !== undefined) {
    const ip = String(status.podIP);
    if (spec.hostNetwork === true ? ip !== options.hostIP : !/^10\.244\.\d+\.\d+$/.test(ip)) {
      problems.push(`podIP "${ip}" is outside the pod network`);
    }
    if (obj(list(status.podIPs)[0]).ip !== ip) problems.push("podIPs mismatch");
  }
  if (!["Guaranteed", "Burstable", "BestEffort"].includes(String(status.qosClass))) {
    problems.push("qosClass invalid");
  }
  return problems.map((p) => `${meta.namespace}/${meta.name}: ${p}`);
}
