/**
 * The metrics registry: prom-client, hidden behind this module so the rest
 * of the daemon depends on {@linkcode Metrics} and not on the library.
 *
 * @module
 */

import { collectDefaultMetrics, Registry } from "prom-client";
import { createMetrics, type Metrics } from "./metrics.ts";

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
}

/**
 * Creates a registry and registers every metric in it.
 *
 * @param options Whether to include process metrics.
 * @returns The registry and its metrics.
 */
export function createMetricsRegistry(options: MetricsRegistryOptions = {}): MetricsRegistry {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const metrics = createMetrics(registry);
  return {
    metrics,
    expose: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
