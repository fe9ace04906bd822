/**
 * The query engine: label and field selectors, lookups by name, container ID
 * and IP, resume tokens over a retained change log, tombstones, and selected
 * watches. Shared by the `PodQuery` gRPC service and the HTTP surface.
 *
 * @module
 */

export { ChangeLog, type HistoryLimits, newIncarnation } from "./change_log.ts";
export {
  LookupError,
  ResumeTokenError,
  type ResumeTokenProblem,
  SelectorError,
  TOKEN_TOO_OLD,
  WatchDroppedError,
} from "./errors.ts";
export { normalizeIp } from "./ip.ts";
export { DeviceIndex } from "./device_index.ts";
export {
  type DeviceHolder,
  type NodeDevice,
  NodeDevices,
  type NodeDevicesOptions,
  type NodeDevicesView,
} from "./node_devices.ts";
export { bareContainerId, MIN_CONTAINER_ID_PREFIX, PodIndex, quote } from "./pod_index.ts";
export {
  type LookupKey,
  type LookupResult,
  QueryEngine,
  type QueryEngineOptions,
  type QueryWatch,
  type QueryWatchOptions,
  selectEvent,
  WATCH_BATCH_ITEMS,
  type WatchItem,
  type WatchItemType,
} from "./query_engine.ts";
export {
  compileSelector,
  parseFieldSelector,
  parseLabelSelector,
  POD_SELECTABLE_FIELDS,
  podFieldValue,
  type PodSelectableField,
  type PodSelector,
  SELECT_ALL,
  type SelectorSpec,
} from "./selector.ts";
