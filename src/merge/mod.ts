/**
 * Merging pod sources: the {@linkcode PodMerger} combines the kubelet's
 * `/pods`, static manifests and the runtime's view by pod UID, and the pure
 * status helpers rebuild a pod's status from the runtime and its spec;
 * best-effort sources stop holding the sync gate after a timeout.
 *
 * @module
 */

export { CONFIG_ANNOTATION, isStaticPod, PodMerger } from "./pod_merger.ts";
export {
  type BestEffortOptions,
  type ReleasableGate,
  releaseBestEffortSources,
  sourcesToRelease,
} from "./best_effort.ts";
export {
  anyRegularContainerStarted,
  type DerivedPhase,
  isSidecar,
  KUBELET_CONDITIONS,
  type OverlayInput,
  overlayStatus,
  pendingStatus,
  type PendingStatusOptions,
  type PhaseInput,
  podPhaseOf,
  type RestartPolicy,
  restartPolicyOf,
  WAITING_REASON,
  waitingContainerStatus,
} from "./_status_overlay.ts";
