/**
 * The daemon exactly as `pods-api serve --simulate` composes it (same
 * `simulatedSources()`: the simulated node behind a simulated CRI runtime, read
 * by the CRI source; same `startDaemon()`; same flags), with one addition
 * for the load benchmark: every change of the simulated node is written to a
 * timeline with the time the simulation scheduled it (`due`) and the wall
 * time it was applied to the node (`applied`, when the simulated runtime
 * synced). Watch delivery latency is measured against it.
 *
 * With `--direct`, the simulated node is served by its pod source alone (no
 * simulated runtime in the process): the daemon's own cost, without the
 * runtime's side of the CRI calls.
 *
 * Usage: `sim_daemon.ts --timeline FILE [--direct] <serve flags>`; prints one JSON line
 * `{"metricsPort": n}` on stdout once serving; writes the timeline on SIGTERM.
 *
 * @module
 */

import type { Clock } from "../../src/clock.ts";
import { systemClock } from "../../src/clock.ts";
import { parseServeConfig } from "../../src/config.ts";
import { startDaemon } from "../../src/daemon.ts";
import { createLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { SimulatedPodSource, simulatedSources } from "../../src/sim/mod.ts";
import type { PodSource } from "../../src/sources/mod.ts";
import { type Change, recordChanges, timelineText } from "../_sim_timeline.ts";

async function main(args: string[]): Promise<void> {
  const at = args.indexOf("--timeline");
  const timeline = at >= 0 ? args[at + 1] : undefined;
  let rest = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args;
  const direct = rest.includes("--direct");
  rest = rest.filter((a) => a !== "--direct");
  const config = parseServeConfig(rest);
  const log = createLogger({ level: config.logLevel });
  const registry = createMetricsRegistry({ processMetrics: true });
  // The simulated node reads its start time once, when it is built inside
  // simulatedSources(): pin the clock meanwhile so that the start is known.
  const startMs = Date.now();
  let pinned = true;
  const clock: Clock = { ...systemClock, now: () => pinned ? startMs : Date.now() };
  const created = await simulatedSources(config, { log, clock, metrics: registry.metrics });
  pinned = false;
  const changes: Change[] = [];
  const spec = created.sources.find((s) => s instanceof SimulatedPodSource);
  if (spec instanceof SimulatedPodSource) recordChanges(spec.node, startMs, changes);
  let sources: readonly PodSource[] = created.sources;
  if (direct && spec !== undefined) {
    sources = [spec];
    await created[Symbol.asyncDispose]();
  }
  const daemon = await startDaemon(config, { log, clock, sources, registry });
  const encoder = new TextEncoder();
  await Deno.stdout.write(
    encoder.encode(JSON.stringify({ metricsPort: daemon.metricsPort }) + "\n"),
  );
  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGTERM", () => stop.resolve());
  await stop.promise;
  if (timeline !== undefined) {
    await Deno.writeTextFile(timeline, timelineText(changes));
  }
  await daemon.close();
  if (!direct) await created[Symbol.asyncDispose]();
  Deno.exit(0);
}

await main(Deno.args);
