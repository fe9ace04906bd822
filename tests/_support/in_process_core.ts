/**
 * The serving core in process, over a real cache, hub and query engine, for
 * handler tests with no socket: a gate and a limiter the test sets, a
 * shutdown it triggers, and `apply()` feeding a view as the pipeline does.
 *
 * @module
 */

import { PodCache } from "../../src/cache/mod.ts";
import { FakeClock } from "../../src/clock.ts";
import { EventHub } from "../../src/events/mod.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { encodePod } from "../../src/proto/mod.ts";
import { QueryEngine } from "../../src/query/mod.ts";
import { ServingCore } from "../../src/serving/mod.ts";

/** Options of {@linkcode inProcessCore}. */
export interface InProcessCoreOptions {
  maxWatchers?: number;
  watchQueueLimit?: number;
  /** Each connection's bucket. @default {practically unlimited} */
  connectionLimit?: { qps: number; burst: number };
}

/** A core and what it reads, for a test to drive. */
export interface InProcessCore {
  core: ServingCore;
  cache: PodCache;
  hub: EventHub;
  engine: QueryEngine;
  clock: FakeClock;
  metrics: Metrics;
  /** Open unless the test closes it. */
  gate: { isOpen: boolean };
  /** The shared bucket: `tokens` calls are admitted. */
  limiter: { tokens: number; tryTake(): boolean };
  shutdown: AbortController;
  /** Applies a full view to the cache and publishes its events, as the pipeline does. */
  apply(view: readonly PodSnapshot[]): void;
}

/**
 * @param options Bounds of the core.
 * @returns A synced, serving core with an unlimited shared bucket.
 */
export function inProcessCore(options: InProcessCoreOptions = {}): InProcessCore {
  const { metrics } = createMetricsRegistry();
  const clock = new FakeClock();
  const cache = new PodCache({ encode: encodePod, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const engine = new QueryEngine({
    store: cache,
    hub,
    clock,
    history: { maxAgeMs: 60_000, maxEvents: 1000 },
    tombstoneTtlMs: 60_000,
  });
  const gate = { isOpen: true };
  const limiter = {
    tokens: Infinity,
    tryTake() {
      if (this.tokens <= 0) return false;
      this.tokens--;
      return true;
    },
  };
  const shutdown = new AbortController();
  const core = new ServingCore({
    engine,
    gate,
    limiter,
    connectionLimit: options.connectionLimit ?? { qps: 1e9, burst: 1e6 },
    clock,
    metrics,
    shutdown: shutdown.signal,
    ...(options.maxWatchers === undefined ? {} : { maxWatchers: options.maxWatchers }),
    ...(options.watchQueueLimit === undefined ? {} : { watchQueueLimit: options.watchQueueLimit }),
  });
  return {
    core,
    cache,
    hub,
    engine,
    clock,
    metrics,
    gate,
    limiter,
    shutdown,
    apply(view) {
      const events = cache.apply(view);
      engine.apply(events);
      hub.publish(events);
    },
  };
}
