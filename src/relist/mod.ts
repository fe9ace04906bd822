/**
 * The relist loop of a pod source and the sync gate that waits for every
 * source's first read (best-effort sources stop holding it after a timeout).
 *
 * @module
 */

export { DEFAULT_MAX_BACKOFF, Relister, type RelisterOptions } from "./relister.ts";
export {
  readinessReasons,
  SourceFeed,
  type SourceFeedOptions,
  type SyncRecord,
} from "./source_feed.ts";
export {
  DEFAULT_STALE_AFTER,
  type GateHealth,
  SyncGate,
  type SyncGateOptions,
} from "./sync_gate.ts";
export {
  type BestEffortOptions,
  type ReleasableGate,
  releaseBestEffortSources,
  sourcesToRelease,
} from "./best_effort.ts";
export { Watcher } from "./watcher.ts";
