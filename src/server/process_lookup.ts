/**
 * The process lookups of `podsapi.v1.PodQuery.Get` (`host_pid`,
 * `cgroup_id`, `cgroup_path`, `mntns_inode`): the process index names the
 * container, the query engine the pod holding it, and the pod's statuses
 * the container's name and kind.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import type { JsonValue } from "../model/json.ts";
import type { GetKeyMessage, ProcessContainerMessage } from "../proto/mod.ts";
import type { QueryEngine } from "../query/mod.ts";
import {
  type ProcessIndex,
  type ProcessKey,
  ProcessLookupError,
  type ProcessLookupFailure,
} from "../sources/process/mod.ts";
import { RpcError, STATUS, type StatusCode } from "./errors.ts";

/** The process kinds of the Get key. */
export type ProcessGetKey = Extract<GetKeyMessage, ProcessKey>;

/**
 * Whether a Get key names a process.
 *
 * @param key The decoded key.
 * @returns `true` for `pid`, `cgroupId`, `cgroupPath`, `mntns`.
 */
export function isProcessKey(key: GetKeyMessage): key is ProcessGetKey {
  return key.kind === "pid" || key.kind === "cgroupId" || key.kind === "cgroupPath" ||
    key.kind === "mntns";
}

/** A process lookup's answer. */
export interface ProcessFound {
  readonly pod: CachedPod;
  readonly container: ProcessContainerMessage;
}

/**
 * The gRPC status of each failure: out of descriptors is worth a retry, a
 * missing grant is not. UNAVAILABLE, not RESOURCE_EXHAUSTED, for the first:
 * clients of this API take RESOURCE_EXHAUSTED for the rate limit, and would
 * retry into it and report a rate limit instead of the daemon's message.
 */
const STATUS_OF_FAILURE: Readonly<Record<ProcessLookupFailure, StatusCode>> = {
  invalid: STATUS.INVALID_ARGUMENT,
  "not_found": STATUS.NOT_FOUND,
  unavailable: STATUS.FAILED_PRECONDITION,
  exhausted: STATUS.UNAVAILABLE,
};

const STATUS_LISTS = [
  ["containerStatuses", false, false],
  ["initContainerStatuses", true, false],
  ["ephemeralContainerStatuses", false, true],
] as const;

function stringField(value: JsonValue | undefined, name: string): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "";
  const field = value[name];
  return typeof field === "string" ? field : "";
}

/**
 * Finds the pod and container of a process.
 *
 * @param key The process key.
 * @param index The process index; `undefined`: no source knows processes.
 * @param engine The query engine (pods by container ID).
 * @returns The pod and the container.
 * @throws {RpcError} INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE.
 */
export function lookupProcess(
  key: ProcessGetKey,
  index: ProcessIndex | undefined,
  engine: Pick<QueryEngine, "lookup">,
): ProcessFound {
  if (index === undefined) {
    throw new RpcError(
      STATUS.FAILED_PRECONDITION,
      "Process lookups need the container runtime source (--runtime-endpoint)",
    );
  }
  let found;
  try {
    found = index.lookup(key);
  } catch (err) {
    if (!(err instanceof ProcessLookupError)) throw err;
    throw new RpcError(STATUS_OF_FAILURE[err.reason], err.message);
  }
  const pod = engine.lookup({ kind: "containerId", id: found.containerId })?.pod;
  if (pod === undefined || pod.uid !== found.podUid) {
    throw new RpcError(
      STATUS.NOT_FOUND,
      `Container "${found.containerId}" of the process is in no pod served yet`,
    );
  }
  let name = "";
  let init = false;
  let ephemeral = false;
  let containerId = found.containerId;
  const status = pod.pod.status;
  for (const [list, isInit, isEphemeral] of STATUS_LISTS) {
    const statuses = status?.[list];
    if (!Array.isArray(statuses)) continue;
    for (const s of statuses) {
      const id = stringField(s, "containerID");
      if (id === found.containerId || id.endsWith(`://${found.containerId}`)) {
        name = stringField(s, "name");
        containerId = id;
        init = isInit;
        ephemeral = isEphemeral;
      }
    }
  }
  return {
    pod,
    container: {
      name,
      containerId,
      init,
      ephemeral,
      initPid: found.initPid,
      cgroupPath: found.cgroupPath,
      cgroupId: found.cgroupId,
      mntnsInode: found.mntns,
    },
  };
}
