/**
 * The relist loop of a pod source and the sync gate that waits for every
 * source's first read.
 *
 * @module
 */

export {
  DEFAULT_MAX_BACKOFF,
  Relister,
  type RelisterOptions,
  type SyncRecord,
} from "./relister.ts";
export {
  DEFAULT_STALE_AFTER,
  type GateHealth,
  SyncGate,
  type SyncGateOptions,
} from "./sync_gate.ts";
export { readinessReasons } from "./readiness.ts";
