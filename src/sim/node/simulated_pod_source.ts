/**
 * The simulated node as a pod source: what `pods-api serve --simulate`, the
 * demo and the load benchmark read.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";
import type { PodObject, PodSnapshot } from "../../model/pod.ts";
import type { SimulatedNode } from "./simulated_node.ts";
import type { PolledSource } from "../../sources/mod.ts";

/** Options of {@linkcode SimulatedPodSource}. */
export interface SimulatedPodSourceOptions {
  /** The node whose pods are reported. */
  node: SimulatedNode;
  /** The time to advance the node to on each read. @default {node.clock} */
  clock?: Clock;
}

/**
 * A {@linkcode PolledSource} over a {@linkcode SimulatedNode}: each `list()`
 * advances the node to the clock's time and reports its pods. A pod that
 * did not change keeps its snapshot object, so the cache skips it by
 * identity.
 *
 * @example Usage
 * ```ts
 * import { SimulatedNode } from "./simulated_node.ts";
 * import { SimulatedPodSource } from "./simulated_pod_source.ts";
 * import { systemClock } from "../../clock.ts";
 * const node = new SimulatedNode({ clock: systemClock, pods: 10 });
 * const source = new SimulatedPodSource({ node });
 * console.log((await source.list(AbortSignal.timeout(1000))).length);
 * ```
 */
export class SimulatedPodSource implements PolledSource {
  /** Reported as `"fake"`: a simulated node is a fake source. */
  readonly kind = "fake" as const;
  /** The node behind the source. */
  readonly node: SimulatedNode;

  #clock: Clock;
  #snapshots = new WeakMap<PodObject, PodSnapshot>();
  #lastPods: readonly PodObject[] | undefined;
  #lastList: readonly PodSnapshot[] = Object.freeze([]);

  /** @param options The node and, optionally, another clock. */
  constructor(options: SimulatedPodSourceOptions) {
    this.node = options.node;
    this.#clock = options.clock ?? options.node.clock;
  }

  /**
   * Advances the node to the clock's time and reports its pods.
   *
   * @param signal Aborts the read.
   * @returns One snapshot per pod.
   */
  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    if (signal.aborted) return Promise.reject(signal.reason);
    this.node.advanceTo(this.#clock.now());
    const pods = this.node.pods();
    if (pods !== this.#lastPods) {
      const list: PodSnapshot[] = [];
      for (const pod of pods) {
        let snapshot = this.#snapshots.get(pod);
        if (snapshot === undefined) {
          snapshot = Object.freeze({ uid: pod.metadata.uid, pod });
          this.#snapshots.set(pod, snapshot);
        }
        list.push(snapshot);
      }
      this.#lastPods = pods;
      this.#lastList = Object.freeze(list);
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    return Promise.resolve(this.#lastList);
  }
}
