/**
 * The pod cache: change detection (`PodCache.apply()`) and the read side
 * (`PodStore`) that request handlers use.
 *
 * @module
 */

export type { CachedPod, PodEncoder, PodEvent, PodEventType, PodStore } from "./types.ts";
export { isResourcesOnlyChange } from "./types.ts";
export { PodCache, type PodCacheOptions } from "./pod_cache.ts";
export { compareUids, diffPods, type PodDiff, type StoredInput } from "./diff.ts";
