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

import { createMetricsRegistry } from "../src/metrics/registry.ts";
import { relistFixture } from "./_relist_fixture.ts";
import { systemClock } from "../src/clock.ts";

const clock = { ...systemClock, now: () => 1_767_225_600_000 };
const metrics = createMetricsRegistry().metrics;
const { hub, engine, change, relist } = await relistFixture(clock, metrics);
const without: number[] = [];
const withEngine: number[] = [];
const upkeep: number[] = [];
for (let round = 0; round < 800; round++) {
  change();
  const useEngine = round % 2 === 0;
  const start = performance.now();
  const events = await relist();
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
