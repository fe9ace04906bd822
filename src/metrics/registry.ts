/**
 * The daemon's metrics registry: every metric of `metrics.ts` in one
 * {@linkcode Registry}, behind this module so the rest of the daemon depends
 * on {@linkcode Metrics} and the exposition, not on how they are kept.
 *
 * @module
 */

import { Registry } from "./exposition.ts";
import { createMetrics, createProcessMetrics, type Metrics } from "./metrics.ts";
import { openProcSelf, type ProcReader } from "./proc_self.ts";

/** A registry with the daemon's metrics in it. */
export interface MetricsRegistry {
  readonly metrics: Metrics;
  /** @returns The Prometheus text exposition of every metric. */
  expose(): Promise<string>;
  /** The exposition's content type. */
  readonly contentType: string;
}

/** Options of {@linkcode createMetricsRegistry}. */
export interface MetricsRegistryOptions {
  /** Add process metrics (CPU, memory, file descriptors). @default {false} */
  processMetrics?: boolean;
  /** Where process metrics read `/proc/self`. @default {Deno's file APIs, when permitted} */
  proc?: ProcReader;
}

/**
 * Creates a registry and registers every metric in it.
 *
 * @param options Whether to include process metrics.
 * @returns The registry and its metrics.
 */
export function createMetricsRegistry(options: MetricsRegistryOptions = {}): MetricsRegistry {
  const registry = new Registry();
  if (options.processMetrics) createProcessMetrics(registry, openProcSelf(options.proc));
  const metrics = createMetrics(registry);
  return {
    metrics,
    // A `collect` that throws rejects the promise (the scrape answers 500), as before.
    expose: () => new Promise((resolve) => resolve(registry.expose())),
    contentType: registry.contentType,
  };
}
