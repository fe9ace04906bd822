/**
 * Processes to containers: what the runtime says of each container's init
 * process, and the index that answers which pod's container a PID, cgroup
 * or mount namespace belongs to.
 *
 * @module
 */

export {
  cgroupDirOf,
  type ContainerProcess,
  type ContainerProcessSource,
  parseContainerInfo,
  type RunningContainerProcess,
} from "./container_process.ts";
export {
  CGROUP_ROOTS,
  cgroupRootsAt,
  type ContainerOfProcess,
  hostProcFs,
  ProcessIndex,
  type ProcessIndexOptions,
  type ProcessKey,
  ProcessLookupError,
  type ProcessLookupFailure,
  type ProcFs,
  unifiedCgroupOf,
} from "./process_index.ts";
