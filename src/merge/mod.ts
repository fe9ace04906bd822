/**
 * Merging pod sources: the {@linkcode PodMerger} combines the kubelet's
 * `/pods`, static manifests and the runtime's view by pod UID (the status
 * rules it applies are `src/status/`'s), by the traits of each source kind.
 *
 * @module
 */

export { isStaticPod, PodMerger } from "./pod_merger.ts";
