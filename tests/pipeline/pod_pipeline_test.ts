import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { PodPipeline } from "../../src/pipeline/mod.ts";
import { Relister } from "../../src/relist/mod.ts";
import { canonicalEncoder, makeSnapshot } from "../_fixtures/pods.ts";

function pipelineOf(sources: ("cri" | "kubelet" | "fake")[]) {
  const clock = new FakeClock();
  const pipeline = new PodPipeline({
    sources,
    encode: canonicalEncoder,
    clock,
    metrics: createMetricsRegistry().metrics,
    log: silentLogger,
    history: { maxAgeMs: 60_000, maxEvents: 1000 },
    tombstoneTtlMs: 60_000,
  });
  return { pipeline, clock };
}

Deno.test("PodPipeline.apply() takes a view through merge, cache, query engine, hub and gate", async () => {
  const { pipeline } = pipelineOf(["fake", "kubelet"]);
  const subscription = pipeline.hub.subscribe({ signal: new AbortController().signal });
  subscription.markLive();
  pipeline.apply("fake", [makeSnapshot({ uid: "a", name: "a" })]);
  assert.deepEqual(pipeline.cache.list().map((p) => p.uid), ["a"], "cached");
  assert.equal(
    pipeline.query.lookup({ kind: "name", namespace: "default", name: "a" })?.pod.uid,
    "a",
    "indexed by the query engine",
  );
  const item = await subscription.next();
  assert.ok(item.state === "event" && item.event.type === "ADDED", "published");
  assert.equal(pipeline.gate.isOpen, false, "the kubelet has not synced yet");
  assert.deepEqual(pipeline.gate.pending(), ["kubelet"]);
  pipeline.apply("kubelet", []);
  assert.equal(pipeline.gate.isOpen, true);
  pipeline.close();
  assert.equal((await subscription.next()).state, "closed");
});

Deno.test("Relister with the pipeline's gate: the gate is the one record of a source's sync", async () => {
  const { pipeline, clock } = pipelineOf(["fake"]);
  const relister = new Relister({
    source: { kind: "fake", list: () => Promise.resolve([makeSnapshot({ uid: "a" })]) },
    sink: (snapshots) => pipeline.apply("fake", snapshots),
    gate: pipeline.gate,
    clock,
    metrics: createMetricsRegistry().metrics,
    log: silentLogger,
    period: 1000,
    timeout: 1000,
  });
  assert.equal(relister.feed.synced, false);
  clock.advance(500);
  assert.ok(await relister.relistOnce(new AbortController().signal));
  assert.equal(relister.feed.synced, true);
  assert.equal(relister.feed.lastSuccessAt, pipeline.gate.lastSuccess("fake"));
  assert.equal(relister.feed.lastSuccessAt, clock.now());
});
