/**
 * The pod conditions the kubelet owns, as its status manager generates them
 * (`generate.go`): Initialized, ContainersReady and Ready, each as a draft
 * (type, status, reason, message) to which the caller adds the transition
 * time it knows.
 *
 * @module
 */

import { type JsonObject, objectsOf } from "../model/json.ts";
import { byName, str } from "./_container_json.ts";
import type { PodContainerStatuses } from "./container_statuses.ts";
import { anyRegularContainerStarted, isSidecar } from "./phase.ts";

/** Condition types the kubelet computes itself, in the order it writes them. */
export const KUBELET_CONDITIONS = [
  "PodReadyToStartContainers",
  "Initialized",
  "Ready",
  "ContainersReady",
  "PodScheduled",
] as const;

/** Reasons of the kubelet's conditions. */
export const CONDITION_REASON = {
  podCompleted: "PodCompleted",
  podFailed: "PodFailed",
  containersNotInitialized: "ContainersNotInitialized",
  containersNotReady: "ContainersNotReady",
  unknownContainerStatuses: "UnknownContainerStatuses",
  readinessGatesNotReady: "ReadinessGatesNotReady",
} as const;

/** A condition before its transition time is known. */
export interface ConditionDraft {
  readonly type: string;
  readonly status: "True" | "False";
  readonly reason?: string;
  readonly message?: string;
}

/** The statuses the condition rules read: init and regular ones. */
export type ConditionStatuses = Pick<PodContainerStatuses, "init" | "regular">;

/** Go's `fmt` rendering of a `[]string`: `[a b]`. */
function goList(names: readonly string[]): string {
  return `[${names.join(" ")}]`;
}

/**
 * Finds a condition by type.
 *
 * @param conditions `status.conditions`.
 * @param type The condition type.
 * @returns The first condition of that type.
 */
export function findCondition(
  conditions: readonly JsonObject[],
  type: string,
): JsonObject | undefined {
  return conditions.find((c) => c.type === type);
}

/**
 * `Initialized`: True once the pod succeeded (PodCompleted) or a regular
 * container has started; else False while an init container is not done
 * (a regular one not ready, a sidecar not started).
 *
 * @param spec The pod spec.
 * @param statuses Its init and regular container statuses.
 * @param phase The pod's phase.
 * @returns The draft.
 */
export function initializedCondition(
  spec: Readonly<JsonObject>,
  statuses: ConditionStatuses,
  phase: string,
): ConditionDraft {
  const type = "Initialized";
  if (phase === "Succeeded") {
    return { type, status: "True", reason: CONDITION_REASON.podCompleted };
  }
  if (anyRegularContainerStarted(spec, statuses.regular)) return { type, status: "True" };
  const map = byName(statuses.init);
  const incomplete: string[] = [];
  for (const c of objectsOf(spec.initContainers)) {
    const name = str(c.name) ?? "";
    const cs = map.get(name);
    const done = isSidecar(c) ? cs?.started === true : cs?.ready === true;
    if (!done) incomplete.push(name);
  }
  if (incomplete.length > 0) {
    return {
      type,
      status: "False",
      reason: CONDITION_REASON.containersNotInitialized,
      message: `containers with incomplete status: ${goList(incomplete)}`,
    };
  }
  return { type, status: "True" };
}

/**
 * `ContainersReady`: False for a terminal pod (PodCompleted, PodFailed) and
 * while the container statuses are unknown (`undefined`); else True when
 * every sidecar and regular container is ready.
 *
 * @param spec The pod spec.
 * @param statuses Its container statuses, or `undefined` when not known at all.
 * @param phase The pod's phase.
 * @returns The draft.
 */
export function containersReadyCondition(
  spec: Readonly<JsonObject>,
  statuses: ConditionStatuses | undefined,
  phase: string,
): ConditionDraft {
  const type = "ContainersReady";
  if (phase === "Succeeded") {
    return { type, status: "False", reason: CONDITION_REASON.podCompleted };
  }
  if (phase === "Failed") return { type, status: "False", reason: CONDITION_REASON.podFailed };
  if (statuses === undefined) {
    return { type, status: "False", reason: CONDITION_REASON.unknownContainerStatuses };
  }
  const init = byName(statuses.init);
  const regular = byName(statuses.regular);
  const unready: string[] = [];
  for (const c of objectsOf(spec.initContainers)) {
    if (!isSidecar(c)) continue;
    const name = str(c.name) ?? "";
    if (init.get(name)?.ready !== true) unready.push(name);
  }
  for (const c of objectsOf(spec.containers)) {
    const name = str(c.name) ?? "";
    if (regular.get(name)?.ready !== true) unready.push(name);
  }
  if (unready.length > 0) {
    return {
      type,
      status: "False",
      reason: CONDITION_REASON.containersNotReady,
      message: `containers with unready status: ${goList(unready)}`,
    };
  }
  return { type, status: "True" };
}

/**
 * `Ready`: ContainersReady, and then every readiness gate's condition True.
 *
 * @param spec The pod spec (`readinessGates`).
 * @param containersReady The pod's ContainersReady draft.
 * @param others Conditions not owned by the kubelet (the gates' own).
 * @returns The draft.
 */
export function readyCondition(
  spec: Readonly<JsonObject>,
  containersReady: ConditionDraft,
  others: readonly JsonObject[],
): ConditionDraft {
  const type = "Ready";
  if (containersReady.status !== "True") return { ...containersReady, type };
  const problems: string[] = [];
  for (const gate of objectsOf(spec.readinessGates)) {
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
      reason: CONDITION_REASON.readinessGatesNotReady,
      message: problems.join(", "),
    };
  }
  return { type, status: "True" };
}

/**
 * Turns a draft into a `v1.PodCondition` in JSON shape.
 *
 * @param draft The draft.
 * @param lastTransitionTime Its transition time, when known.
 * @returns The condition, fields in the kubelet's order.
 */
export function conditionOf(draft: ConditionDraft, lastTransitionTime?: string): JsonObject {
  const c: JsonObject = { type: draft.type, status: draft.status };
  if (lastTransitionTime !== undefined) c.lastTransitionTime = lastTransitionTime;
  if (draft.reason !== undefined) c.reason = draft.reason;
  if (draft.message !== undefined) c.message = draft.message;
  return c;
}
