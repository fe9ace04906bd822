import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { MAX_HOLD_BACK, PodPipeline } from "../../src/pipeline/mod.ts";
import type { PodObject } from "../../src/model/pod.ts";
import type { PodSourceKind } from "../../src/model/pod_source_kind.ts";
import { canonicalEncoder, makePod } from "../_fixtures/pods.ts";
import { containerResources, gpuPod, podResources } from "../_fixtures/pod_resources.ts";
import { metricValue } from "../_support/metric_value.ts";

function pipelineWith(pods: PodObject[], sources: PodSourceKind[] = ["fake"]) {
  const registry = createMetricsRegistry();
  const pipeline = new PodPipeline({
    sources,
    encode: canonicalEncoder,
    clock: new FakeClock(),
    metrics: registry.metrics,
    log: silentLogger,
    history: { maxAgeMs: 60_000, maxEvents: 1000 },
    tombstoneTtlMs: 60_000,
  });
  const set = (list: PodObject[]) =>
    pipeline.apply("fake", list.map((pod) => ({ uid: pod.metadata.uid, pod })));
  set(pods);
  const held = (uid: string) => pipeline.cache.get(uid)?.resources;
  return { pipeline, registry, set, held };
}

Deno.test("applyResources() joins by namespace/name onto the pod's UID and leaves the pod bytes alone", () => {
  const { pipeline, held } = pipelineWith([
    makePod({ uid: "u1", name: "trainer", namespace: "ml" }),
  ]);
  const before = pipeline.cache.get("u1")!;
  const result = pipeline.applyResources([
    gpuPod("ml", "trainer", ["GPU-2", "GPU-1"]),
    gpuPod("ml", "unknown", ["GPU-3"]),
    podResources("ml", "trainer-idle", [containerResources("app")]),
  ]);
  assert.deepEqual([result.matched, result.noPod, result.heldBack], [1, 1, 0]);
  const after = pipeline.cache.get("u1")!;
  assert.equal(after.bytes, before.bytes, "the same bytes");
  assert.equal(after.version, before.version, "the same content version");
  assert.deepEqual(held("u1")?.containers[0]?.devices, [
    { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-1", "GPU-2"], numaNodes: [0] },
  ]);
});

Deno.test("applyResources(): a pod re-created under the same name gets the new devices, the old one none", () => {
  const old = makePod({
    uid: "old",
    name: "job",
    namespace: "ml",
    creationTimestamp: "2026-01-01T00:00:00Z",
  });
  const { pipeline, set, held } = pipelineWith([old]);
  pipeline.applyResources([gpuPod("ml", "job", ["GPU-A"])]);
  assert.deepEqual(held("old")?.containers[0]?.devices[0]?.deviceIds, ["GPU-A"]);

  // The old pod is being deleted and its replacement is known: the kubelet
  // lists only the one it runs, the new one.
  const fresh = makePod({
    uid: "new",
    name: "job",
    namespace: "ml",
    creationTimestamp: "2026-01-01T00:05:00Z",
  });
  const deleting = makePod({
    uid: "old",
    name: "job",
    namespace: "ml",
    deletionTimestamp: "2026-01-01T00:04:00Z",
  });
  set([deleting, fresh]);
  const result = pipeline.applyResources([gpuPod("ml", "job", ["GPU-B"])]);
  assert.equal(result.matched, 1);
  assert.deepEqual(held("new")?.containers[0]?.devices[0]?.deviceIds, ["GPU-B"]);
  assert.equal(held("old"), undefined, "the kubelet no longer lists the old pod");
});

Deno.test("applyResources(): both alive under one name, the newest is the kubelet's", () => {
  const { pipeline, held } = pipelineWith([
    makePod({ uid: "a", name: "x", creationTimestamp: "2026-01-01T00:00:00Z" }),
    makePod({ uid: "b", name: "x", creationTimestamp: "2026-01-01T00:00:09Z" }),
    makePod({ uid: "c", name: "x", creationTimestamp: "2026-01-01T00:00:30Z", phase: "Succeeded" }),
  ]);
  pipeline.applyResources([gpuPod("default", "x", ["GPU-1"])]);
  assert.deepEqual([held("a"), held("c")], [undefined, undefined]);
  assert.ok(held("b") !== undefined);
});

Deno.test("applyResources(): new devices under a name whose known pod had others wait for the new UID", async () => {
  const { pipeline, set, held, registry } = pipelineWith([makePod({ uid: "old", name: "job" })]);
  pipeline.applyResources([gpuPod("default", "job", ["GPU-A"])]);
  // The kubelet already runs the re-created pod; the cache has not seen it yet.
  const early = pipeline.applyResources([gpuPod("default", "job", ["GPU-B"])]);
  assert.deepEqual([early.matched, early.heldBack], [0, 1]);
  assert.equal(held("old"), undefined, "not lent the new pod's devices");
  assert.equal(await metricValue(registry.metrics.podResourcesPods, { join: "held_back" }), 1);
  set([makePod({ uid: "new", name: "job", creationTimestamp: "2026-01-01T00:01:00Z" })]);
  const late = pipeline.applyResources([gpuPod("default", "job", ["GPU-B"])]);
  assert.deepEqual([late.matched, late.heldBack], [1, 0]);
  assert.deepEqual(held("new")?.containers[0]?.devices[0]?.deviceIds, ["GPU-B"]);
});

Deno.test("applyResources(): a held-back entry is taken after MAX_HOLD_BACK answers in a row", () => {
  const { pipeline, held } = pipelineWith([makePod({ uid: "p", name: "job" })]);
  pipeline.applyResources([gpuPod("default", "job", ["GPU-A"])]);
  for (let i = 0; i < MAX_HOLD_BACK; i++) {
    assert.equal(pipeline.applyResources([gpuPod("default", "job", ["GPU-B"])]).heldBack, 1);
  }
  assert.equal(pipeline.applyResources([gpuPod("default", "job", ["GPU-B"])]).matched, 1);
  assert.deepEqual(held("p")?.containers[0]?.devices[0]?.deviceIds, ["GPU-B"]);
});

Deno.test("applyResources(): an entry naming containers the pod does not have is held back", () => {
  const { pipeline, held } = pipelineWith([
    makePod({ uid: "p", name: "job", containers: ["app"] }),
  ]);
  const result = pipeline.applyResources([
    podResources("default", "job", [containerResources("trainer", { cpuIds: [4] })]),
  ]);
  assert.equal(result.heldBack, 1);
  assert.equal(held("p"), undefined);
});

Deno.test("applyResources(): the same allocation in another order is no change", () => {
  const { pipeline } = pipelineWith([makePod({ uid: "p", name: "job", containers: ["a", "b"] })]);
  const first = podResources("default", "job", [
    containerResources("a", {
      devices: [["x/y", ["2", "1"], [1]], ["nvidia.com/gpu", ["G"], [0]]],
    }),
    containerResources("b", { cpuIds: [7, 3] }),
  ]);
  const reordered = podResources("default", "job", [
    containerResources("b", { cpuIds: [3, 7] }),
    containerResources("a", {
      devices: [["nvidia.com/gpu", ["G"], [0]], ["x/y", ["1"], [1]], ["x/y", ["2"], [1]]],
    }),
  ]);
  const position = pipeline.query.position;
  pipeline.applyResources([first]);
  assert.equal(pipeline.query.position, position + 1, "one change");
  pipeline.applyResources([reordered]);
  assert.equal(pipeline.query.position, position + 1, "no second change");
  pipeline.applyResources([]);
  assert.equal(pipeline.query.position, position + 2, "gone from the answer: holds nothing");
  assert.equal(pipeline.cache.get("p")?.resources, undefined);
});

Deno.test("applyResources(): a pod only the runtime shows is not held back for containers it has not made yet", () => {
  const { pipeline } = pipelineWith([], ["fake", "cri"]);
  // The runtime runs the pod's init container; its app container is not made yet.
  const pod = makePod({ uid: "p", name: "job", containers: ["init"] });
  pipeline.apply("cri", [{ uid: "p", pod }]);
  const entry = podResources("default", "job", [containerResources("app", { cpuIds: [4] })]);
  assert.deepEqual(pipeline.applyResources([entry]).matched, 1, "the runtime's spec is partial");
  // Once a spec source has the pod, its spec is whole and decides.
  pipeline.apply("fake", [{ uid: "p", pod }]);
  assert.equal(pipeline.applyResources([entry]).heldBack, 1);
});
