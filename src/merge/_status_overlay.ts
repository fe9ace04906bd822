/**
 * Pure status rebuilding for the merger: a pod's spec (from the kubelet or a
 * manifest) plus what the runtime reports (the CRI source's status) gives the
 * status the kubelet itself would compute: container states from the runtime,
 * phase from the kubelet's `getPhase` rules with the real restart policy and
 * init containers (sidecars included), and the kubelet-owned conditions.
 *
 * Where the runtime cannot know something, the source's status fills in:
 * - probe results (`ready`, `started`) of a container instance the source has
 *   already seen (same `containerID`); for a newer instance, a container with
 *   a readiness probe is not ready and one with a startup probe not started,
 *   until the source reports otherwise (the kubelet's own start state);
 * - a terminated container the runtime has already removed keeps its last
 *   reported state (it cannot have come back to life);
 * - a terminal phase (Succeeded, Failed) reported by the source is final;
 * - conditions the kubelet does not own (readiness gates, DisruptionTarget)
 *   and fields CRI lacks (`qosClass`, `reason`, `message`, `resize`...).
 *
 * Nothing here reads time or mutates its inputs.
 *
 * @module
 */

import { isJsonObject, type JsonObject } from "../model/json.ts";
import {
  anyRegularContainerStarted,
  byName,
  type DerivedPhase,
  exitCode,
  isSidecar,
  objects,
  type PhaseInput,
  podPhaseOf,
  type RestartPolicy,
  restartPolicyOf,
  stateKind,
  str,
} from "../model/pod_phase.ts";

export {
  anyRegularContainerStarted,
  type DerivedPhase,
  isSidecar,
  type PhaseInput,
  podPhaseOf,
  type RestartPolicy,
  restartPolicyOf,
};

/** Container waiting reasons the kubelet uses before a container exists. */
export const WAITING_REASON = {
  containerCreating: "ContainerCreating",
  podInitializing: "PodInitializing",
} as const;

/** Condition types the kubelet computes itself, in the order it writes them. */
export const KUBELET_CONDITIONS = [
  "PodReadyToStartContainers",
  "Initialized",
  "Ready",
  "ContainersReady",
  "PodScheduled",
] as const;

const KUBELET_CONDITION_SET: ReadonlySet<string> = new Set(KUBELET_CONDITIONS);
const TERMINAL_PHASES: ReadonlySet<string> = new Set(["Succeeded", "Failed"]);
const STATUS_LISTS = [
  "initContainerStatuses",
  "containerStatuses",
  "ephemeralContainerStatuses",
] as const;

/** Inputs of {@linkcode overlayStatus}. */
export interface OverlayInput {
  /** The pod's spec, from the richest source. */
  readonly spec: Readonly<JsonObject>;
  /** The status that source reported (kubelet: its own; manifest: Pending). */
  readonly sourceStatus?: Readonly<JsonObject> | undefined;
  /** The status converted from the runtime's sandboxes and containers. */
  readonly runtimeStatus: Readonly<JsonObject>;
}

// ------------------------------------------------------------------ small readers

function allStatuses(status: Readonly<JsonObject> | undefined): JsonObject[] {
  if (status === undefined) return [];
  return STATUS_LISTS.flatMap((key) => objects(status[key]));
}

function compareNames(a: JsonObject, b: JsonObject): number {
  const x = str(a.name) ?? "";
  const y = str(b.name) ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

// ------------------------------------------------------------------ containers

type ContainerKind = "init" | "sidecar" | "regular" | "ephemeral";

/**
 * Builds the `Waiting` status of a container the runtime does not have yet.
 *
 * @param container The container's spec.
 * @param reason `ContainerCreating`, or `PodInitializing` for a regular
 *   container of a pod that has init containers.
 * @returns A `v1.ContainerStatus` in its JSON shape.
 */
export function waitingContainerStatus(
  container: Readonly<JsonObject>,
  reason: string,
): JsonObject {
  const status: JsonObject = {
    name: str(container.name) ?? "",
    state: { waiting: { reason } },
    lastState: {},
    ready: false,
    restartCount: 0,
    image: str(container.image) ?? "",
    imageID: "",
    started: false,
  };
  return status;
}

function hasProbe(container: Readonly<JsonObject>, probe: string): boolean {
  return isJsonObject(container[probe]);
}

function containerStatus(
  container: Readonly<JsonObject>,
  kind: ContainerKind,
  runtime: JsonObject | undefined,
  source: JsonObject | undefined,
  defaultReason: string,
): JsonObject {
  if (runtime === undefined) {
    // The runtime has removed (or not yet created) it. A terminated container
    // stays terminated; anything else is waiting to be created.
    if (source !== undefined && stateKind(source.state) === "terminated") return { ...source };
    const waiting = waitingContainerStatus(container, defaultReason);
    if (source !== undefined) {
      if (isJsonObject(source.lastState)) waiting.lastState = source.lastState;
      if (typeof source.restartCount === "number") waiting.restartCount = source.restartCount;
    }
    return waiting;
  }
  const same = source !== undefined && str(source.containerID) !== undefined &&
    source.containerID === runtime.containerID;
  const status: JsonObject = same ? { ...source } : { name: str(container.name) ?? "" };
  status.state = runtime.state ?? {};
  const runtimeLast = runtime.lastState;
  status.lastState = stateKind(runtimeLast) !== undefined
    ? runtimeLast!
    : same && isJsonObject(source!.lastState)
    ? source!.lastState
    : {};
  const restarts = typeof runtime.restartCount === "number" ? runtime.restartCount : 0;
  const known = same && typeof source!.restartCount === "number" ? source!.restartCount : 0;
  status.restartCount = Math.max(restarts, known);
  if (!same || str(status.image) === undefined) status.image = runtime.image ?? "";
  if (!same || str(status.imageID) === undefined) status.imageID = runtime.imageID ?? "";
  if (runtime.containerID !== undefined) status.containerID = runtime.containerID;

  const running = stateKind(status.state) === "running";
  const sourceStarted = same && typeof source!.started === "boolean" ? source!.started : undefined;
  const sourceReady = same && typeof source!.ready === "boolean" ? source!.ready : undefined;
  const started = running && (sourceStarted ?? !hasProbe(container, "startupProbe"));
  switch (kind) {
    case "init":
      status.ready = exitCode(status.state) === 0;
      status.started = running;
      break;
    case "ephemeral":
      status.ready = false;
      status.started = running;
      break;
    default:
      status.started = started;
      status.ready = started && (sourceReady ?? !hasProbe(container, "readinessProbe"));
  }
  return status;
}

interface BuiltStatuses {
  readonly init: JsonObject[];
  readonly regular: JsonObject[];
  readonly ephemeral: JsonObject[];
}

function buildContainerStatuses(
  spec: Readonly<JsonObject>,
  runtimeStatus: Readonly<JsonObject>,
  sourceStatus: Readonly<JsonObject> | undefined,
): BuiltStatuses {
  const runtime = byName(allStatuses(runtimeStatus));
  const source = byName(allStatuses(sourceStatus));
  const initSpecs = objects(spec.initContainers);
  const regularReason = initSpecs.length > 0
    ? WAITING_REASON.podInitializing
    : WAITING_REASON.containerCreating;
  const build = (c: JsonObject, kind: ContainerKind, reason: string) => {
    const name = str(c.name) ?? "";
    return containerStatus(c, kind, runtime.get(name), source.get(name), reason);
  };
  return {
    init: initSpecs.map((c) =>
      build(c, isSidecar(c) ? "sidecar" : "init", WAITING_REASON.containerCreating)
    ),
    regular: objects(spec.containers).map((c) => build(c, "regular", regularReason))
      .sort(compareNames),
    ephemeral: objects(spec.ephemeralContainers).map((c) =>
      build(c, "ephemeral", WAITING_REASON.containerCreating)
    ).sort(compareNames),
  };
}

// ------------------------------------------------------------------ phase

// ------------------------------------------------------------------ conditions

/** Go's `fmt` rendering of a `[]string`. */
function goList(names: readonly string[]): string {
  return `[${names.join(" ")}]`;
}

function findCondition(
  conditions: readonly JsonObject[],
  type: string,
): JsonObject | undefined {
  return conditions.find((c) => c.type === type);
}

interface ConditionDraft {
  readonly type: string;
  readonly status: "True" | "False";
  readonly reason?: string;
  readonly message?: string;
}

/**
 * Keeps a known transition time: the source's when its condition already had
 * this status (the kubelet's own record), else the runtime-derived one.
 */
function finish(
  draft: ConditionDraft,
  source: readonly JsonObject[],
  runtime: readonly JsonObject[],
): JsonObject {
  const condition: JsonObject = { type: draft.type, status: draft.status };
  const previous = [findCondition(source, draft.type), findCondition(runtime, draft.type)];
  const same = previous.find((c) => c?.status === draft.status && str(c.lastTransitionTime));
  const at = str(same?.lastTransitionTime) ?? str(previous[1]?.lastTransitionTime);
  if (at !== undefined) condition.lastTransitionTime = at;
  if (draft.reason !== undefined) condition.reason = draft.reason;
  if (draft.message !== undefined) condition.message = draft.message;
  return condition;
}

function initializedCondition(
  spec: Readonly<JsonObject>,
  statuses: BuiltStatuses,
  phase: string,
): ConditionDraft {
  const type = "Initialized";
  const inits = objects(spec.initContainers);
  const map = byName(statuses.init);
  const incomplete: string[] = [];
  for (const c of inits) {
    const name = str(c.name) ?? "";
    const cs = map.get(name);
    const done = isSidecar(c) ? cs?.started === true : cs?.ready === true;
    if (!done) incomplete.push(name);
  }
  if (phase === "Succeeded") return { type, status: "True", reason: "PodCompleted" };
  if (anyRegularContainerStarted(spec, statuses.regular)) return { type, status: "True" };
  if (incomplete.length > 0) {
    return {
      type,
      status: "False",
      reason: "ContainersNotInitialized",
      message: `containers with incomplete status: ${goList(incomplete)}`,
    };
  }
  return { type, status: "True" };
}

function containersReadyCondition(
  spec: Readonly<JsonObject>,
  statuses: BuiltStatuses,
  phase: string,
): ConditionDraft {
  const type = "ContainersReady";
  if (phase === "Succeeded") return { type, status: "False", reason: "PodCompleted" };
  if (phase === "Failed") return { type, status: "False", reason: "PodFailed" };
  const init = byName(statuses.init);
  const regular = byName(statuses.regular);
  const unready: string[] = [];
  for (const c of objects(spec.initContainers)) {
    if (!isSidecar(c)) continue;
    const name = str(c.name) ?? "";
    if (init.get(name)?.ready !== true) unready.push(name);
  }
  for (const c of objects(spec.containers)) {
    const name = str(c.name) ?? "";
    if (regular.get(name)?.ready !== true) unready.push(name);
  }
  if (unready.length > 0) {
    return {
      type,
      status: "False",
      reason: "ContainersNotReady",
      message: `containers with unready status: ${goList(unready)}`,
    };
  }
  return { type, status: "True" };
}

function readyCondition(
  spec: Readonly<JsonObject>,
  containersReady: ConditionDraft,
  others: readonly JsonObject[],
): ConditionDraft {
  const type = "Ready";
  if (containersReady.status !== "True") return { ...containersReady, type };
  const problems: string[] = [];
  for (const gate of objects(spec.readinessGates)) {
    const name = str(gate.conditionType) ?? "";
    const c = findCondition(others, name);
    if (c === undefined) {
      problems.push(`corresponding condition of pod readiness gate "${name}" does not exist.`);
    } else if (c.status !== "True") {
      problems.push(
        `the status of pod readiness gate "${name}" is not "True", but ${str(c.status) ?? ""}`,
      );
    }
  }
  if (problems.length > 0) {
    return {
      type,
      status: "False",
      reason: "ReadinessGatesNotReady",
      message: problems.join(", "),
    };
  }
  return { type, status: "True" };
}

// ------------------------------------------------------------------ overlay

/**
 * Rebuilds a pod's status from the runtime's view and the pod's spec.
 *
 * @example Usage
 * ```ts
 * import { overlayStatus } from "./_status_overlay.ts";
 * const status = overlayStatus({
 *   spec: { restartPolicy: "Never", containers: [{ name: "job", image: "busybox" }] },
 *   sourceStatus: { phase: "Running", qosClass: "BestEffort" },
 *   runtimeStatus: {
 *     phase: "Running",
 *     containerStatuses: [{
 *       name: "job",
 *       state: { terminated: { exitCode: 0, reason: "Completed" } },
 *       containerID: "containerd://abc",
 *     }],
 *   },
 * });
 * status.phase; // "Succeeded"
 * ```
 *
 * @param input Spec, the source's status and the runtime's status.
 * @returns A new status object; the inputs are not modified.
 */
export function overlayStatus(input: OverlayInput): JsonObject {
  const { spec, sourceStatus, runtimeStatus } = input;
  const statuses = buildContainerStatuses(spec, runtimeStatus, sourceStatus);
  const sourceConditions = objects(sourceStatus?.conditions);
  const runtimeConditions = objects(runtimeStatus.conditions);
  const sourcePhase = str(sourceStatus?.phase);
  const wasInitialized = findCondition(sourceConditions, "Initialized")?.status === "True";
  const phase: string = sourcePhase !== undefined && TERMINAL_PHASES.has(sourcePhase)
    ? sourcePhase
    : podPhaseOf({
      spec,
      statuses: [...statuses.init, ...statuses.regular],
      podHasInitialized: wasInitialized ||
        anyRegularContainerStarted(spec, statuses.regular),
    });

  const others = sourceConditions.filter((c) => !KUBELET_CONDITION_SET.has(str(c.type) ?? ""));
  const containersReady = containersReadyCondition(spec, statuses, phase);
  const drafts: Record<string, ConditionDraft> = {
    Initialized: initializedCondition(spec, statuses, phase),
    Ready: readyCondition(spec, containersReady, others),
    ContainersReady: containersReady,
  };
  const conditions: JsonObject[] = [];
  for (const type of KUBELET_CONDITIONS) {
    const draft = drafts[type];
    if (draft !== undefined) {
      conditions.push(finish(draft, sourceConditions, runtimeConditions));
      continue;
    }
    // Sandbox readiness is the runtime's; scheduling is the source's.
    const taken = type === "PodScheduled"
      ? findCondition(sourceConditions, type) ?? findCondition(runtimeConditions, type)
      : findCondition(runtimeConditions, type) ?? findCondition(sourceConditions, type);
    if (taken !== undefined) conditions.push(taken);
  }
  conditions.push(...others);

  const status: JsonObject = { ...sourceStatus };
  for (const key of STATUS_LISTS) delete status[key];
  status.phase = phase;
  status.conditions = conditions;
  for (const key of ["hostIP", "hostIPs", "podIP", "podIPs"] as const) {
    if (runtimeStatus[key] !== undefined) status[key] = runtimeStatus[key];
  }
  if (status.startTime === undefined && runtimeStatus.startTime !== undefined) {
    status.startTime = runtimeStatus.startTime;
  }
  if (statuses.init.length > 0) status.initContainerStatuses = statuses.init;
  status.containerStatuses = statuses.regular;
  if (statuses.ephemeral.length > 0) status.ephemeralContainerStatuses = statuses.ephemeral;
  return status;
}

/** Options of {@linkcode pendingStatus}. */
export interface PendingStatusOptions {
  /** Fields to add (`qosClass`, `startTime`...). */
  readonly extra?: JsonObject;
  /** `lastTransitionTime` of the conditions (when the pod was first seen). */
  readonly since?: string;
}

/**
 * The status of a pod no runtime runs yet, as the kubelet reports a pod it
 * has just admitted: `Pending`, every container `Waiting` (`ContainerCreating`,
 * or `PodInitializing` for regular containers behind init containers), the
 * sandbox not ready, the pod scheduled (it is bound to this node).
 *
 * @example Usage
 * ```ts
 * import { pendingStatus } from "./_status_overlay.ts";
 * pendingStatus({ containers: [{ name: "app", image: "nginx" }] }).phase; // "Pending"
 * ```
 *
 * @param spec The pod spec.
 * @param options Extra fields and the conditions' transition time.
 * @returns A new status object.
 */
export function pendingStatus(
  spec: Readonly<JsonObject>,
  options: PendingStatusOptions = {},
): JsonObject {
  const built = buildContainerStatuses(spec, {}, undefined);
  const phase = "Pending";
  const containersReady = containersReadyCondition(spec, built, phase);
  const drafts: ConditionDraft[] = [
    { type: "PodReadyToStartContainers", status: "False" },
    initializedCondition(spec, built, phase),
    readyCondition(spec, containersReady, []),
    containersReady,
    { type: "PodScheduled", status: "True" },
  ];
  const conditions = drafts.map((draft) => {
    const c: JsonObject = { type: draft.type, status: draft.status };
    if (options.since !== undefined) c.lastTransitionTime = options.since;
    if (draft.reason !== undefined) c.reason = draft.reason;
    if (draft.message !== undefined) c.message = draft.message;
    return c;
  });
  const status: JsonObject = { ...options.extra, phase, conditions };
  if (built.init.length > 0) status.initContainerStatuses = built.init;
  status.containerStatuses = built.regular;
  return status;
}
