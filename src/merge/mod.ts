/**
 * Merging pod sources: the {@linkcode PodMerger} combines the kubelet's
 * `/pods`, static manifests and the runtime's view by pod UID (the status
 * rules it applies are `src/status/`'s); best-effort sources stop holding the
 * sync gate after a timeout.
 *
 * @module
 */

export { isStaticPod, PodMerger } from "./pod_merger.ts";
export {
  type BestEffortOptions,
  type ReleasableGate,
  releaseBestEffortSources,
  sourcesToRelease,
} from "./best_effort.ts";
