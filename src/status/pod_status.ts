/**
 * A pod's whole status as the kubelet would write it, from its spec plus
 * what the runtime reports ({@linkcode overlayStatus}), or before any
 * runtime has it ({@linkcode pendingStatus}).
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

import { type JsonObject, objectsOf } from "../model/json.ts";
import { str } from "./_container_json.ts";
import {
  type ConditionDraft,
  conditionOf,
  containersReadyCondition,
  findCondition,
  initializedCondition,
  KUBELET_CONDITIONS,
  readyCondition,
} from "./conditions.ts";
import { podContainerStatuses, STATUS_LISTS } from "./container_statuses.ts";
import { anyRegularContainerStarted, isTerminalPhase, podPhaseOf } from "./phase.ts";

const KUBELET_CONDITION_SET: ReadonlySet<string> = new Set(KUBELET_CONDITIONS);

/** Inputs of {@linkcode overlayStatus}. */
export interface OverlayInput {
  /** The pod's spec, from the richest source. */
  readonly spec: Readonly<JsonObject>;
  /** The status that source reported (kubelet: its own; manifest: Pending). */
  readonly sourceStatus?: Readonly<JsonObject> | undefined;
  /** The status converted from the runtime's sandboxes and containers. */
  readonly runtimeStatus: Readonly<JsonObject>;
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
  const previous = [findCondition(source, draft.type), findCondition(runtime, draft.type)];
  const same = previous.find((c) => c?.status === draft.status && str(c.lastTransitionTime));
  const at = str(same?.lastTransitionTime) ?? str(previous[1]?.lastTransitionTime);
  return conditionOf(draft, at);
}

/**
 * Rebuilds a pod's status from the runtime's view and the pod's spec:
 * container states from the runtime, the phase by `getPhase` with the real
 * restart policy and init containers, and the kubelet-owned conditions.
 *
 * @example Usage
 * ```ts
 * import { overlayStatus } from "./pod_status.ts";
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
  const statuses = podContainerStatuses(spec, runtimeStatus, sourceStatus);
  const sourceConditions = objectsOf(sourceStatus?.conditions);
  const runtimeConditions = objectsOf(runtimeStatus.conditions);
  const sourcePhase = str(sourceStatus?.phase);
  const wasInitialized = findCondition(sourceConditions, "Initialized")?.status === "True";
  const phase: string = isTerminalPhase(sourcePhase) ? sourcePhase : podPhaseOf({
    spec,
    statuses: [...statuses.init, ...statuses.regular],
    podHasInitialized: wasInitialized || anyRegularContainerStarted(spec, statuses.regular),
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
 * import { pendingStatus } from "./pod_status.ts";
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
  const built = podContainerStatuses(spec, {}, undefined);
  const phase = "Pending";
  const containersReady = containersReadyCondition(spec, built, phase);
  const drafts: ConditionDraft[] = [
    { type: "PodReadyToStartContainers", status: "False" },
    initializedCondition(spec, built, phase),
    readyCondition(spec, containersReady, []),
    containersReady,
    { type: "PodScheduled", status: "True" },
  ];
  const conditions = drafts.map((draft) => conditionOf(draft, options.since));
  const status: JsonObject = { ...options.extra, phase, conditions };
  if (built.init.length > 0) status.initContainerStatuses = built.init;
  status.containerStatuses = built.regular;
  return status;
}
