/**
 * Container status transitions: each takes a `v1.ContainerStatus` (JSON
 * shape) and returns a new one, never touching the old. What the kubelet
 * reports when a container is created, starts, dies, backs off or exits.
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import { containerId, imageId } from "./_names.ts";
import type { Prng } from "../_prng.ts";
import { rfc3339 } from "../../model/rfc3339.ts";

/** How a container instance ended. */
export interface Exit {
  readonly exitCode: number;
  readonly reason: "Completed" | "Error" | "OOMKilled";
}

/** The ways a failing container commonly dies. */
const FAILURES: readonly Exit[] = [
  { exitCode: 1, reason: "Error" },
  { exitCode: 1, reason: "Error" },
  { exitCode: 2, reason: "Error" },
  { exitCode: 137, reason: "OOMKilled" },
  { exitCode: 143, reason: "Error" },
];

/** The kubelet's crash-loop back-off: 10 s doubling up to 5 minutes. */
const MAX_BACKOFF_S = 300;

/**
 * @param prng The generator.
 * @returns A failed exit (non-zero code, reason Error or OOMKilled).
 */
export function randomFailure(prng: Prng): Exit {
  return prng.pick(FAILURES);
}

function goDuration(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return m > 0 ? `${m}m${s}s` : `${s}s`;
}

/**
 * A container that does not exist yet.
 *
 * @param container The spec container (`name`, `image`).
 * @param reason `ContainerCreating`, or `PodInitializing` in a pod with init containers.
 * @returns Its status.
 */
export function waitingStatus(container: JsonObject, reason: string): JsonObject {
  return {
    name: container.name as string,
    state: { waiting: { reason } },
    lastState: {},
    ready: false,
    restartCount: 0,
    image: container.image as string,
    imageID: "",
    started: false,
  };
}

/**
 * A new instance of the container starts running (first start or restart).
 *
 * @param status The container's status before.
 * @param atMs When it started.
 * @param prng For the new container ID.
 * @param options `ready`: whether its readiness probe passed; `restarted`:
 *   a previous instance existed, so the restart count grows.
 * @returns The new status.
 */
export function startContainer(
  status: JsonObject,
  atMs: number,
  prng: Prng,
  options: { ready: boolean; restarted: boolean },
): JsonObject {
  const image = status.image as string;
  return {
    name: status.name as string,
    state: { running: { startedAt: rfc3339(atMs) } },
    lastState: status.lastState as JsonObject,
    ready: options.ready,
    restartCount: (status.restartCount as number) + (options.restarted ? 1 : 0),
    image,
    imageID: imageId(image),
    containerID: containerId(prng),
    started: true,
  };
}

function terminatedState(status: JsonObject, atMs: number, exit: Exit): JsonObject {
  const running = (status.state as JsonObject).running as JsonObject;
  return {
    terminated: {
      exitCode: exit.exitCode,
      reason: exit.reason,
      startedAt: running.startedAt as string,
      finishedAt: rfc3339(atMs),
      containerID: status.containerID as string,
    },
  };
}

/**
 * A running container exits for good (its pod will not restart it).
 *
 * @param status A running container's status.
 * @param atMs When it exited.
 * @param exit Exit code and reason.
 * @returns The new status.
 */
export function finishContainer(status: JsonObject, atMs: number, exit: Exit): JsonObject {
  return {
    ...status,
    state: terminatedState(status, atMs, exit),
    ready: false,
    started: false,
  };
}

/**
 * A running container dies and is restarted at once: the old instance
 * moves to `lastState`, the restart count grows.
 *
 * @param status A running container's status.
 * @param atMs When it died and the new instance started.
 * @param exit How the old instance ended.
 * @param prng For the new container ID.
 * @returns The new status.
 */
export function restartRunning(
  status: JsonObject,
  atMs: number,
  exit: Exit,
  prng: Prng,
): JsonObject {
  const last = terminatedState(status, atMs, exit);
  return startContainer({ ...status, lastState: last }, atMs, prng, {
    ready: true,
    restarted: true,
  });
}

/**
 * The container died and the kubelet waits out the back-off before the
 * next try: Waiting CrashLoopBackOff, the dead instance in `lastState`.
 * From a running container, its instance is the one that died; from one
 * already backing off, a new instance ran briefly and died too.
 *
 * @param status A running or backing-off container's status.
 * @param atMs When the instance died.
 * @param exit How it ended.
 * @param options The pod's `name_namespace(uid)` for the message, and the generator.
 * @returns The new status.
 */
export function crashContainer(
  status: JsonObject,
  atMs: number,
  exit: Exit,
  options: { podRef: string; prng: Prng },
): JsonObject {
  let dead = status;
  if ((status.state as JsonObject).running === undefined) {
    // The retry after the back-off: a new instance starts and dies within the second.
    dead = startContainer(status, atMs, options.prng, { ready: false, restarted: true });
  }
  const restarts = dead.restartCount as number;
  const backoff = Math.min(10 * 2 ** Math.min(restarts, 5), MAX_BACKOFF_S);
  return {
    ...dead,
    state: {
      waiting: {
        reason: "CrashLoopBackOff",
        message: `back-off ${goDuration(backoff)} restarting failed container=${dead
          .name as string} pod=${options.podRef}`,
      },
    },
    lastState: terminatedState(dead, atMs, exit),
    ready: false,
    started: false,
  };
}

/**
 * Reports whether a container status is Waiting in CrashLoopBackOff.
 *
 * @param status A container status.
 * @returns `true` when it is backing off.
 */
export function isCrashLooping(status: JsonObject): boolean {
  const waiting = (status.state as JsonObject).waiting as JsonObject | undefined;
  return waiting?.reason === "CrashLoopBackOff";
}
