/**
 * The query engine's upkeep on relists that change 10% of 1000 pods,
 * measured interleaved: relists alternate with and without the engine on the
 * same heap, so garbage collection falls on both alike (a `Deno.bench` pair
 * runs one after the other, on a heap the first one grew). Prints medians
 * and means over 400 relists (the first 50 of each are warm-up).
 *
 * `deno run --frozen --allow-read --allow-env --allow-sys bench/query_upkeep_run.ts`
 *
 * @module
 */

import { PodCache } from "../src/cache/mod.ts";
import { EventHub } from "../src/events/mod.ts";
import { PodMerger } from "../src/merge/mod.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import { encodePod } from "../src/proto/mod.ts";
import { QueryEngine } from "../src/query/mod.ts";
import { runKubeletPod } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { CONTAINER_STATE, CriPodSource } from "../src/sources/cri/mod.ts";

const clock = { now: () => 1_767_225_600_000 };
const metrics = createMetricsRegistry().metrics;
const runtime = new SimCriRuntime({ clock });
const flippable: string[] = [];
for (let i = 0; i < 1000; i++) {
  const handle = await runKubeletPod(runtime, {
    name: `pod-${i}`,
    namespace: `ns-${i % 20}`,
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    labels: { app: `app-${i % 50}` },
    annotations: {},
    containers: [{ name: "app", image: "registry.example/app:1" }, {
      name: "sidecar",
      image: "registry.example/proxy:2",
    }],
  });
  flippable.push(handle.containerIds.app!);
}
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
const signal = new AbortController().signal;
engine.apply(cache.apply(merger.update("cri", await source.list(signal))));
let next = 0;
function change(): void {
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
}
const without: number[] = [];
const withEngine: number[] = [];
const upkeep: number[] = [];
for (let round = 0; round < 800; round++) {
  change();
  const useEngine = round % 2 === 0;
  const start = performance.now();
  const events = cache.apply(merger.update("cri", await source.list(signal)));
  if (useEngine) {
    const u = performance.now();
    engine.apply(events);
    upkeep.push(performance.now() - u);
  }
  hub.publish(events);
  (useEngine ? withEngine : without).push(performance.now() - start);
}
const steady = (a: number[]) => a.slice(50);
const median = (a: number[]) =>
  [...steady(a)].sort((x, y) => x - y)[Math.floor(steady(a).length / 2)]!;
const mean = (a: number[]) => steady(a).reduce((x, y) => x + y, 0) / steady(a).length;
const ms = (n: number) => Number(n.toFixed(3));
const report = {
  relistMedianMs: ms(median(without)),
  relistWithEngineMedianMs: ms(median(withEngine)),
  relistMeanMs: ms(mean(without)),
  relistWithEngineMeanMs: ms(mean(withEngine)),
  upkeepMedianMs: ms(median(upkeep)),
  upkeepMeanMs: ms(mean(upkeep)),
  addedByMedians: `${((median(withEngine) / median(without) - 1) * 100).toFixed(1)}%`,
  addedByMeans: `${((mean(withEngine) / mean(without) - 1) * 100).toFixed(1)}%`,
  upkeepOfRelistMedian: `${((median(upkeep) / median(without)) * 100).toFixed(1)}%`,
};
Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(report, null, 2) + "\n"));
