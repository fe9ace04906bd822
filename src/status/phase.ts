/**
 * A pod's phase, as the kubelet's `getPhase` (kubelet_pods.go) derives it
 * from the spec and the container statuses, and the terminal-phase rule
 * every stage shares: Succeeded and Failed are final.
 *
 * @module
 */

import { type JsonObject, objectsOf } from "../model/json.ts";
import { POD_PHASE } from "../model/pod.ts";
import { byName, exitCode, stateKind, str } from "./_container_json.ts";

/** `v1.RestartPolicy`. */
export type RestartPolicy = "Always" | "OnFailure" | "Never";

/** The phases {@linkcode podPhaseOf} can derive. */
export type DerivedPhase = "Pending" | "Running" | "Succeeded" | "Failed";

/** Inputs of {@linkcode podPhaseOf}. */
export interface PhaseInput {
  /** The pod spec: `initContainers` (with sidecars), `containers`, `restartPolicy`. */
  readonly spec: Readonly<JsonObject>;
  /** Statuses of init and regular containers, in any order. */
  readonly statuses: readonly JsonObject[];
  /** The kubelet has decided the pod will not run again. @default {false} */
  readonly podIsTerminal?: boolean;
  /** The pod was initialized before (its Initialized condition was True). @default {false} */
  readonly podHasInitialized?: boolean;
}

/**
 * Reports whether a phase is terminal: a pod that reached Succeeded or
 * Failed never runs again, so no later report may move it out.
 *
 * @example Usage
 * ```ts
 * import { isTerminalPhase } from "./phase.ts";
 * isTerminalPhase("Failed"); // true
 * ```
 *
 * @param phase A `status.phase`, or anything.
 * @returns `true` for `Succeeded` and `Failed`.
 */
export function isTerminalPhase(phase: unknown): phase is "Succeeded" | "Failed" {
  return phase === POD_PHASE.succeeded || phase === POD_PHASE.failed;
}

/**
 * Derives `status.phase` as the kubelet's `getPhase` does: regular init
 * containers gate the pod; sidecars (init containers with `restartPolicy:
 * Always`) count as running while they run and gate the pod only until it
 * has initialized; then regular containers and the restart policy decide.
 *
 * @example Usage
 * ```ts
 * import { podPhaseOf } from "./phase.ts";
 * podPhaseOf({
 *   spec: { restartPolicy: "Never", containers: [{ name: "job" }] },
 *   statuses: [{ name: "job", state: { terminated: { exitCode: 0 } } }],
 * }); // "Succeeded"
 * ```
 *
 * @param input Spec, container statuses and the terminal flags.
 * @returns The phase.
 */
export function podPhaseOf(input: PhaseInput): DerivedPhase {
  const { spec } = input;
  const statuses = byName(input.statuses);
  const restartPolicy = restartPolicyOf(spec);
  let pendingRegularInit = 0;
  let pendingSidecars = 0;
  let failedInit = 0;
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  const inits = objectsOf(spec.initContainers);
  for (const c of inits) {
    if (isSidecar(c)) continue;
    const cs = statuses.get(str(c.name) ?? "");
    const state = stateKind(cs?.state);
    if (cs === undefined || state === "running" || state === undefined) pendingRegularInit++;
    else if (state === "terminated") {
      if (exitCode(cs.state) !== 0) failedInit++;
    } else if (stateKind(cs.lastState) === "terminated") {
      if (exitCode(cs.lastState) !== 0) failedInit++;
    } else pendingRegularInit++;
  }
  for (const c of inits) {
    if (!isSidecar(c)) continue;
    const cs = statuses.get(str(c.name) ?? "");
    if (cs === undefined) {
      unknown++;
      continue;
    }
    const state = stateKind(cs.state);
    if (state === "running") {
      if (cs.started !== true) pendingSidecars++;
      running++;
    } else if (state === "waiting") {
      if (stateKind(cs.lastState) !== "terminated") {
        pendingSidecars++;
        waiting++;
      }
    } else if (state === undefined) {
      pendingSidecars++;
      unknown++;
    }
  }
  for (const c of objectsOf(spec.containers)) {
    const cs = statuses.get(str(c.name) ?? "");
    const state = stateKind(cs?.state);
    if (cs === undefined || state === undefined) unknown++;
    else if (state === "running") running++;
    else if (state === "terminated") {
      stopped++;
      if (exitCode(cs.state) === 0) succeeded++;
    } else if (stateKind(cs.lastState) === "terminated") stopped++;
    else waiting++;
  }
  if (failedInit > 0 && restartPolicy === "Never") return "Failed";
  if (pendingRegularInit > 0 || (pendingSidecars > 0 && !input.podHasInitialized)) {
    return "Pending";
  }
  if (waiting > 0) return "Pending";
  if (running > 0 && unknown === 0) return "Running";
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (input.podIsTerminal) return stopped === succeeded ? "Succeeded" : "Failed";
    if (restartPolicy === "Always") return "Running";
    if (stopped === succeeded) return "Succeeded";
    if (restartPolicy === "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

/** Inputs of {@linkcode phaseFromStatuses}: container statuses in `v1.ContainerStatus` JSON shape. */
export interface StatusesPhaseInput {
  readonly initContainerStatuses: readonly JsonObject[];
  readonly containerStatuses: readonly JsonObject[];
  /** @default {"Always"} */
  readonly restartPolicy?: RestartPolicy;
  /** The pod will not run again (deleted, evicted); the kubelet knows, a runtime does not. @default {false} */
  readonly podIsTerminal?: boolean;
}

/**
 * Derives `status.phase` with {@linkcode podPhaseOf} when only container
 * statuses are known (a runtime's view): the spec is inferred from them, and
 * an init container still running after a regular one started can only be a
 * sidecar.
 *
 * @example Usage
 * ```ts
 * import { phaseFromStatuses } from "./phase.ts";
 * phaseFromStatuses({
 *   initContainerStatuses: [],
 *   containerStatuses: [{ name: "app", state: { terminated: { exitCode: 0 } }, lastState: {} }],
 *   restartPolicy: "Never",
 * }); // "Succeeded"
 * ```
 *
 * @param input Statuses, restart policy, terminal flag.
 * @returns `Pending`, `Running`, `Succeeded` or `Failed`.
 */
export function phaseFromStatuses(input: StatusesPhaseInput): DerivedPhase {
  const regularStarted = input.containerStatuses.some(hasStarted);
  const spec: JsonObject = {
    restartPolicy: input.restartPolicy ?? "Always",
    initContainers: input.initContainerStatuses.map((cs) => ({
      name: cs.name ?? null,
      ...(regularStarted && stateKind(cs.state) === "running" ? { restartPolicy: "Always" } : {}),
    })),
    containers: input.containerStatuses.map((cs) => ({ name: cs.name ?? null })),
  };
  return podPhaseOf({
    spec,
    statuses: [...input.initContainerStatuses, ...input.containerStatuses],
    podIsTerminal: input.podIsTerminal ?? false,
    podHasInitialized: regularStarted,
  });
}

function hasStarted(cs: JsonObject): boolean {
  const state = stateKind(cs.state);
  return state === "running" || state === "terminated" || stateKind(cs.lastState) === "terminated";
}

/**
 * Reports whether any regular container has run (the kubelet's
 * `HasAnyRegularContainerStarted`): after that, the pod counts as initialized
 * even while a sidecar restarts.
 *
 * @param spec The pod spec.
 * @param statuses Container statuses.
 * @returns `true` when a regular container is or was running.
 */
export function anyRegularContainerStarted(
  spec: Readonly<JsonObject>,
  statuses: readonly JsonObject[],
): boolean {
  const map = byName(statuses);
  return objectsOf(spec.containers).some((c) => {
    const cs = map.get(str(c.name) ?? "");
    return cs !== undefined && hasStarted(cs);
  });
}

/**
 * Reports whether an init container is a sidecar (`restartPolicy: Always`).
 *
 * @param container An entry of `spec.initContainers`.
 * @returns `true` for a restartable init container.
 */
export function isSidecar(container: Readonly<JsonObject>): boolean {
  return container.restartPolicy === "Always";
}

/**
 * Reads `spec.restartPolicy`, defaulting as the API server does.
 *
 * @param spec A pod spec.
 * @returns The policy; `Always` when absent or unknown.
 */
export function restartPolicyOf(spec: Readonly<JsonObject>): RestartPolicy {
  const policy = spec.restartPolicy;
  return policy === "OnFailure" || policy === "Never" ? policy : "Always";
}
