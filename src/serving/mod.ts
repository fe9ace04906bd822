/**
 * The serving core every surface admits its calls through: rate limits,
 * shutdown, the sync gate, and one pool of watch slots bounded by
 * `--max-watchers` across both Pods services, PodQuery and the HTTP API.
 *
 * @module
 */

export {
  DEFAULT_MAX_WATCHERS,
  type ServedWatch,
  type ServeWatchOptions,
  ServingCore,
  type ServingCoreOptions,
} from "./serving_core.ts";
export { Refusal, REFUSAL_MESSAGES, type RefusalReason } from "./refusal.ts";
export { WatchSlots } from "./watch_slots.ts";
