// Watcher: a watched source's views reach its feed, relistOnce() waits for
// its first word, and a quiet watch keeps its last-success time current
// while it vouches for its view, not after it failed.
import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { SourceFeed, SyncGate, Watcher } from "../../src/relist/mod.ts";
import type { ViewSink, WatchedSource } from "../../src/sources/mod.ts";
import { SourceUnavailableError } from "../../src/sources/mod.ts";
import { FakeClock, makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";
import { FakeSleeps } from "./_fake_sleeps.ts";

/** A watched source the test speaks for. */
class SpokenSource implements WatchedSource {
  readonly kind = "apiserver" as const;
  sink: ViewSink | undefined;
  run(sink: ViewSink, signal: AbortSignal): Promise<void> {
    this.sink = sink;
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
  }
}

function setup() {
  const clock = new FakeClock(0);
  const { metrics } = createMetricsRegistry();
  const gate = new SyncGate({ sources: ["apiserver"], clock, staleAfter: 1000 });
  const received: (readonly PodSnapshot[])[] = [];
  const feed = new SourceFeed({
    name: "apiserver",
    sink: (snapshots) => {
      received.push(snapshots);
      gate.markSynced("apiserver");
    },
    gate,
    clock,
    metrics,
    log: silentLogger,
    watched: true,
  });
  const sleeps = new FakeSleeps();
  const source = new SpokenSource();
  const watcher = new Watcher(source, feed, { periodMs: 500, sleep: sleeps.sleep });
  return { clock, metrics, gate, received, feed, sleeps, source, watcher };
}

const lastSuccess = (metrics: ReturnType<typeof setup>["metrics"]) =>
  metricValue(metrics.relistLastSuccess, { source: "apiserver" });

Deno.test("Watcher.relistOnce() starts the watch and waits for the source's first word", async () => {
  const { source, watcher, received } = setup();
  const stop = new AbortController();
  let done = false;
  const once = watcher.relistOnce(stop.signal).then((ok) => (done = true, ok));
  await Promise.resolve();
  assert.equal(done, false, "nothing said yet");
  const view = [makeSnapshot({ uid: "a" })];
  source.sink!.view(view);
  assert.equal(await once, true);
  assert.deepEqual(received, [view]);
  source.sink!.failed(new SourceUnavailableError("down", { reason: "connect" }));
  assert.equal(await watcher.relistOnce(stop.signal), false, "its last word was a failure");
  stop.abort();
});

Deno.test("Watcher.run() renews a quiet watch's last-success time each period, not once it failed", async () => {
  const { clock, metrics, gate, source, sleeps, watcher } = setup();
  const stop = new AbortController();
  const running = watcher.run(stop.signal);
  source.sink!.view([makeSnapshot({ uid: "a" })]);
  clock.advance(5000);
  assert.deepEqual(gate.health(clock.now()).reasons, [], "a quiet watch is not stale");
  sleeps.fire(500);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(await lastSuccess(metrics), 5, "renewed to now");
  source.sink!.failed(new SourceUnavailableError("down", { reason: "connect" }));
  clock.advance(999);
  sleeps.fire(500);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(await lastSuccess(metrics), 5, "not renewed after a failure");
  assert.equal(gate.health(clock.now()).ready, true, "current until it failed, then ageing");
  clock.advance(2);
  assert.equal(gate.health(clock.now()).ready, false, "stale a threshold after its failure");
  stop.abort();
  await running;
});
