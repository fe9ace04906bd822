/**
 * Container statuses as the kubelet writes them (`convertToAPIContainerStatuses`
 * and the status manager's start state): the reasons it uses, who counts as
 * ready and started, the status of a container that does not exist yet, and
 * the rebuilding of every status of a pod from the runtime's view plus what a
 * source last reported.
 *
 * @module
 */

import { isJsonObject, type JsonObject, objectsOf } from "../model/json.ts";
import { byName, compareNames, exitCode, stateKind, str } from "./_container_json.ts";
import { isSidecar } from "./phase.ts";

/** Container state reasons the kubelet (and CRI runtimes) use. */
export const CONTAINER_REASON = {
  containerCreating: "ContainerCreating",
  podInitializing: "PodInitializing",
  completed: "Completed",
  error: "Error",
  statusUnknown: "ContainerStatusUnknown",
} as const;

/** The list a container belongs to (a sidecar is an init container that keeps running). */
export type ContainerKind = "init" | "sidecar" | "regular" | "ephemeral";

/** Inputs of {@linkcode containerReadiness}. */
export interface ReadinessInput {
  /** The container's list. */
  readonly kind: ContainerKind;
  /** Its current `v1.ContainerState`. */
  readonly state: JsonObject;
  /** The spec has a startup probe (a running container is not started until it passes). @default {false} */
  readonly startupProbe?: boolean;
  /** The spec has a readiness probe (a started container is not ready until it passes). @default {false} */
  readonly readinessProbe?: boolean;
  /** `started` as the prober last reported it for this instance, if known. */
  readonly probedStarted?: boolean | undefined;
  /** `ready` as the prober last reported it for this instance, if known. */
  readonly probedReady?: boolean | undefined;
}

/**
 * `ready` and `started` of one container: an init container is ready once it
 * exited 0; an ephemeral container is never ready; a regular container (or
 * sidecar) is started when running and past its startup probe, and ready
 * when started and past its readiness probe.
 *
 * @example Usage
 * ```ts
 * import { containerReadiness } from "./container_statuses.ts";
 * containerReadiness({ kind: "regular", state: { running: {} } }); // { ready: true, started: true }
 * ```
 *
 * @param input The container's kind, state, probes and probe results.
 * @returns The two flags.
 */
export function containerReadiness(input: ReadinessInput): { ready: boolean; started: boolean } {
  const running = stateKind(input.state) === "running";
  switch (input.kind) {
    case "init":
      return { ready: exitCode(input.state) === 0, started: running };
    case "ephemeral":
      return { ready: false, started: running };
    default: {
      const started = running && (input.probedStarted ?? !input.startupProbe);
      return { ready: started && (input.probedReady ?? !input.readinessProbe), started };
    }
  }
}

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
  return {
    name: str(container.name) ?? "",
    state: { waiting: { reason } },
    lastState: {},
    ready: false,
    restartCount: 0,
    image: str(container.image) ?? "",
    imageID: "",
    started: false,
  };
}

function hasProbe(container: Readonly<JsonObject>, probe: string): boolean {
  return isJsonObject(container[probe]);
}

/**
 * One container's status from the runtime's record and the source's last
 * report: probe results of the same instance (same `containerID`) are kept;
 * a terminated container the runtime has removed stays terminated.
 */
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
  // An empty image or imageID is one the source did not know (the kubelet
  // writes "" before it has the runtime's), not one to keep over the runtime's.
  if (!same || !str(status.image)) status.image = runtime.image ?? "";
  if (!same || !str(status.imageID)) status.imageID = runtime.imageID ?? "";
  if (runtime.containerID !== undefined) status.containerID = runtime.containerID;
  const { ready, started } = containerReadiness({
    kind,
    state: isJsonObject(status.state) ? status.state : {},
    startupProbe: hasProbe(container, "startupProbe"),
    readinessProbe: hasProbe(container, "readinessProbe"),
    probedStarted: same && typeof source!.started === "boolean" ? source!.started : undefined,
    probedReady: same && typeof source!.ready === "boolean" ? source!.ready : undefined,
  });
  status.ready = ready;
  status.started = started;
  return status;
}

/** A pod's container statuses, one list per kind, in the order the kubelet writes them. */
export interface PodContainerStatuses {
  /** Init containers (sidecars included), in spec order. */
  readonly init: JsonObject[];
  /** Regular containers, by name. */
  readonly regular: JsonObject[];
  /** Ephemeral containers, by name. */
  readonly ephemeral: JsonObject[];
}

/** The three status lists of a `v1.PodStatus`. */
export const STATUS_LISTS = [
  "initContainerStatuses",
  "containerStatuses",
  "ephemeralContainerStatuses",
] as const;

/**
 * Every container status of a pod, from the runtime's status and the
 * source's: one per container of the spec, even before the runtime has it.
 *
 * @param spec The pod spec.
 * @param runtimeStatus The status converted from the runtime's records.
 * @param sourceStatus The status the pod's source reported, if any.
 * @returns The statuses by kind.
 */
export function podContainerStatuses(
  spec: Readonly<JsonObject>,
  runtimeStatus: Readonly<JsonObject>,
  sourceStatus: Readonly<JsonObject> | undefined,
): PodContainerStatuses {
  const runtime = byName(allStatuses(runtimeStatus));
  const source = byName(allStatuses(sourceStatus));
  const initSpecs = objectsOf(spec.initContainers);
  const regularReason = initSpecs.length > 0
    ? CONTAINER_REASON.podInitializing
    : CONTAINER_REASON.containerCreating;
  const build = (c: JsonObject, kind: ContainerKind, reason: string) => {
    const name = str(c.name) ?? "";
    return containerStatus(c, kind, runtime.get(name), source.get(name), reason);
  };
  return {
    init: initSpecs.map((c) =>
      build(c, isSidecar(c) ? "sidecar" : "init", CONTAINER_REASON.containerCreating)
    ),
    regular: objectsOf(spec.containers).map((c) => build(c, "regular", regularReason))
      .sort(compareNames),
    ephemeral: objectsOf(spec.ephemeralContainers).map((c) =>
      build(c, "ephemeral", CONTAINER_REASON.containerCreating)
    ).sort(compareNames),
  };
}

function allStatuses(status: Readonly<JsonObject> | undefined): JsonObject[] {
  if (status === undefined) return [];
  return STATUS_LISTS.flatMap((key) => objectsOf(status[key]));
}
