/**
 * Rate limiting of the unary Pods API calls (ListPods, GetPod share one
 * bucket; WatchPods is not limited).
 *
 * @example
 * ```ts
 * import { DEFAULT_BURST, DEFAULT_QPS, TokenBucket } from "./mod.ts";
 * import { systemClock } from "../clock.ts";
 *
 * const limiter = new TokenBucket({ qps: DEFAULT_QPS, burst: DEFAULT_BURST, clock: systemClock });
 * console.assert(limiter.tryTake());
 * ```
 *
 * @module
 */

export {
  DEFAULT_BURST,
  DEFAULT_QPS,
  type RateLimiter,
  TokenBucket,
  type TokenBucketOptions,
} from "./token_bucket.ts";
