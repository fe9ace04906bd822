/**
 * Counting what a source sends that the served bytes cannot carry: the
 * `v1.Pod` protobuf schema has no place for an unknown field or a value of
 * the wrong type, so the encoder leaves it out. Each new pod object a source
 * hands over is checked once, so the loss is counted and logged, not silent.
 *
 * @module
 */

import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { PodSnapshot } from "../model/pod.ts";
import { unrepresentablePaths } from "../proto/mod.ts";

/** How many paths one log line lists at most. */
const MAX_LOGGED_PATHS = 8;

/** Options of {@linkcode UnrepresentableCounter}. */
export interface UnrepresentableCounterOptions {
  /** Receives the counts. */
  readonly metrics: Pick<Metrics, "sourceFieldsUnrepresentable">;
  /** Names the pod and its first paths, at debug level. */
  readonly log: Logger;
}

/**
 * Counts the values of each new pod object a source reports that the
 * protobuf schema cannot carry. Sources hand back the very same snapshot
 * for an unchanged pod, so a pod is checked once per change, not per read.
 *
 * @example Usage
 * ```ts
 * import { UnrepresentableCounter } from "./unrepresentable_counter.ts";
 * import { createMetricsRegistry } from "../metrics/registry.ts";
 * import { silentLogger } from "../log.ts";
 * const counter = new UnrepresentableCounter({
 *   metrics: createMetricsRegistry().metrics,
 *   log: silentLogger,
 * });
 * const pod = { metadata: { uid: "u", name: "n", namespace: "d" }, spec: { bogus: 1 } };
 * counter.check("kubelet", [{ uid: "u", pod }]); // 1
 * ```
 */
export class UnrepresentableCounter {
  readonly #metrics: UnrepresentableCounterOptions["metrics"];
  readonly #log: Logger;
  readonly #checked = new WeakSet<PodSnapshot>();

  /** @param options Metrics and log. */
  constructor(options: UnrepresentableCounterOptions) {
    this.#metrics = options.metrics;
    this.#log = options.log;
  }

  /**
   * Checks the snapshots not seen before.
   *
   * @param source The source's kind: the metric's `source` label.
   * @param snapshots The source's full view.
   * @returns How many values of the new pods are left out of their bytes.
   */
  check(source: string, snapshots: readonly PodSnapshot[]): number {
    let total = 0;
    for (const snapshot of snapshots) {
      if (this.#checked.has(snapshot)) continue;
      this.#checked.add(snapshot);
      const paths = unrepresentablePaths(snapshot.pod);
      if (paths.length === 0) continue;
      total += paths.length;
      this.#log.debug("pod values the v1.Pod schema cannot carry are left out", {
        source,
        pod: `${snapshot.pod.metadata.namespace}/${snapshot.pod.metadata.name}`,
        paths: paths.slice(0, MAX_LOGGED_PATHS).join(", "),
        count: paths.length,
      });
    }
    if (total > 0) this.#metrics.sourceFieldsUnrepresentable.inc({ source }, total);
    return total;
  }
}
