/**
 * Picks the pod sources a configuration asks for.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ServeConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import { SimulatedNode } from "../sim/mod.ts";
import { SimulatedPodSource } from "./fake/mod.ts";
import type { PodSource } from "./mod.ts";
import { withFirstSyncDelay } from "./_first_sync_delay.ts";

/** What {@linkcode createSources} needs. */
export interface CreateSourcesDeps {
  log: Logger;
  clock: Clock;
}

/**
 * Builds the configured sources.
 *
 * @param config The effective configuration.
 * @param deps Log and clock.
 * @returns The sources, in merge order.
 */
export function createSources(config: ServeConfig, deps: CreateSourcesDeps): Promise<PodSource[]> {
  if (config.simulate) {
    const node = new SimulatedNode({
      clock: deps.clock,
      nodeName: config.nodeName,
      pods: config.simulatePods,
      churnPerSecond: config.simulateChurn,
      seed: config.simulateSeed,
    });
    deps.log.info("serving a simulated node", {
      pods: config.simulatePods,
      churn: config.simulateChurn,
    });
    return Promise.resolve([
      withFirstSyncDelay(new SimulatedPodSource({ node, clock: deps.clock }), {
        delayMs: config.simulateSyncDelayMs,
        clock: deps.clock,
      }),
    ]);
  }
  return Promise.reject(new Error("The CRI source is not wired yet"));
}
