/**
 * A 1000-pod node behind a simulated CRI runtime, relisted as the daemon
 * does (CRI list, merge, cache apply) with the query engine beside the
 * cache, and `change()` flipping 10% of the pods' first container between
 * running and exited. The query benchmarks measure relists with and without
 * the engine's upkeep on it.
 *
 * @module
 */

import type { Clock } from "../src/clock.ts";
import { PodCache } from "../src/cache/mod.ts";
import type { PodEvent } from "../src/cache/types.ts";
import { EventHub } from "../src/events/mod.ts";
import { PodMerger } from "../src/merge/mod.ts";
import type { Metrics } from "../src/metrics/metrics.ts";
import { encodePod } from "../src/proto/mod.ts";
import { QueryEngine } from "../src/query/mod.ts";
import { runKubeletPod } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { CONTAINER_STATE, CriPodSource } from "../src/sources/cri/mod.ts";

/** The fixture, synced once (the engine has seen the first view). */
export interface RelistFixture {
  readonly cache: PodCache;
  readonly hub: EventHub;
  readonly engine: QueryEngine;
  /** Flips 100 of the 1000 pods' app containers (running <-> exited). */
  change(): void;
  /** Lists the runtime, merges and applies to the cache. */
  relist(): Promise<PodEvent[]>;
}

const NEVER = new AbortController().signal;

/**
 * Starts the benchmarks' pods on a simulated runtime: labels, an annotation
 * and two containers each, as the kubelet would.
 *
 * @param runtime The runtime.
 * @param count How many pods.
 * @returns The ID of each pod's app container.
 */
export async function runBenchPods(runtime: SimCriRuntime, count: number): Promise<string[]> {
  const appContainers: string[] = [];
  for (let i = 0; i < count; i++) {
    const handle = await runKubeletPod(runtime, {
      name: `pod-${i}`,
      namespace: `ns-${i % 20}`,
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      labels: { app: `app-${i % 50}`, "pod-template-hash": "5d8f7c9b6" },
      annotations: { "kubernetes.io/config.source": "api" },
      containers: [
        { name: "app", image: "registry.example/app:1.2.3", ports: [{ containerPort: 8080 }] },
        { name: "sidecar", image: "registry.example/proxy:2.0" },
      ],
    });
    appContainers.push(handle.containerIds.app!);
  }
  return appContainers;
}

/**
 * @param clock The clock of the runtime, cache and engine.
 * @param metrics Where the cache and hub count.
 * @returns The fixture.
 */
export async function relistFixture(clock: Clock, metrics: Metrics): Promise<RelistFixture> {
  const runtime = new SimCriRuntime({ clock });
  const flippable = await runBenchPods(runtime, 1000);
  const source = new CriPodSource({ runtime, runtimeName: "containerd", nodeName: "node-1" });
  const cache = new PodCache({ encode: encodePod, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const merger = new PodMerger();
  const engine = new QueryEngine({
    store: cache,
    hub,
    clock,
    history: { maxAgeMs: 300_000, maxEvents: 10_000 },
    tombstoneTtlMs: 300_000,
  });
  const relist = async () => cache.apply(merger.update("cri", await source.list(NEVER)));
  engine.apply(await relist());
  let next = 0;
  return {
    cache,
    hub,
    engine,
    relist,
    change() {
      for (let i = 0; i < 100; i++) {
        const id = flippable[next]!;
        next = (next + 7) % flippable.length;
        runtime.tamperContainer(id, (c) => {
          const running = c.state === CONTAINER_STATE.running;
          c.state = running ? CONTAINER_STATE.exited : CONTAINER_STATE.running;
          c.exitCode = running ? 1 : 0;
          c.finishedAt = running ? c.startedAt + 5e9 : 0;
        });
      }
    },
  };
}
