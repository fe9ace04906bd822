/**
 * Reading a metric's value in a test: from the metric object
 * ({@linkcode metricValue}), or from the text a scrape would get
 * ({@linkcode scrapedMetricValue}).
 *
 * @module
 */

import type { MetricSnapshot } from "../../src/metrics/instruments.ts";
import type { MetricsRegistry } from "../../src/metrics/registry.ts";

/** What {@linkcode metricValue} reads: a counter, gauge or histogram of `src/metrics/instruments.ts`. */
export interface MetricLike {
  get(): Promise<MetricSnapshot>;
}

/**
 * The value of the first sample whose labels include `labels`.
 *
 * @param metric A counter, gauge or histogram.
 * @param labels Labels that must all match (others ignored).
 * @param suffix For a histogram: the sample's name suffix (`_count`, `_sum`). @default {""}
 * @returns Its value, or 0 when there is none.
 */
export async function metricValue(
  metric: MetricLike,
  labels: Record<string, string> = {},
  suffix = "",
): Promise<number> {
  const { values } = await metric.get();
  const found = values.find((v) =>
    (suffix === "" || v.metricName?.endsWith(suffix)) &&
    Object.entries(labels).every(([k, x]) => v.labels[k] === x)
  );
  return found?.value ?? 0;
}

/**
 * Reads a metric from the registry's Prometheus text exposition (what a
 * scrape sees).
 *
 * @param registry The registry.
 * @param name Metric name.
 * @param labels Labels that must all match (others ignored).
 * @returns The sum of matching samples (0 when none).
 */
export async function scrapedMetricValue(
  registry: MetricsRegistry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await registry.expose();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const body = m[2] ?? "";
    if (Object.entries(labels).every(([k, v]) => body.includes(`${k}="${v}"`))) {
      sum += Number(m[3]);
    }
  }
  return sum;
}
