// Allocation changes through the pipeline: who hears of them (only watchers
// that asked, or whose selection they change), and what lookups find.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { PodPipeline } from "../../src/pipeline/mod.ts";
import { compileSelector, type QueryWatch, type WatchItem } from "../../src/query/mod.ts";
import { canonicalEncoder, makePod } from "../_fixtures/pods.ts";
import { gpuPod } from "../_fixtures/pod_resources.ts";

function setUp() {
  const pipeline = new PodPipeline({
    sources: ["fake"],
    encode: canonicalEncoder,
    clock: new FakeClock(),
    metrics: createMetricsRegistry().metrics,
    log: silentLogger,
    history: { maxAgeMs: 60_000, maxEvents: 1000 },
    tombstoneTtlMs: 60_000,
  });
  const pods = [
    makePod({ uid: "u-train", name: "train", namespace: "ml" }),
    makePod({ uid: "u-web", name: "web", namespace: "shop" }),
  ];
  pipeline.apply("fake", pods.map((pod) => ({ uid: pod.metadata.uid, pod })));
  return { pipeline, pods };
}

/** Takes the items a watch has ready, without waiting for more. */
async function ready(watch: QueryWatch, count: number): Promise<WatchItem[]> {
  const items: WatchItem[] = [];
  const it = watch[Symbol.asyncIterator]();
  while (items.length < count) items.push((await it.next()).value as WatchItem);
  return items;
}

Deno.test("a resources-only change reaches no Pods API subscriber and every subscriber that asks", async () => {
  const { pipeline } = setUp();
  const stop = new AbortController();
  const plain = pipeline.hub.subscribe({ signal: stop.signal });
  const asking = pipeline.hub.subscribe({ signal: stop.signal, resources: true });
  plain.markLive();
  asking.markLive();
  pipeline.applyResources([gpuPod("ml", "train", ["GPU-1"])]);
  assert.equal(plain.pending, 0, "the Pods API watcher hears nothing");
  const item = await asking.next();
  assert.ok(item.state === "event" && item.event.type === "MODIFIED");
  assert.equal(item.event.pod.bytes, item.event.prev!.bytes);
  assert.deepEqual(item.event.pod.resources?.containers[0]?.devices[0]?.deviceIds, ["GPU-1"]);
  stop.abort();
  pipeline.close();
});

Deno.test("a pod's resources survive changes of the pod and go into its tombstone", () => {
  const { pipeline, pods } = setUp();
  pipeline.applyResources([gpuPod("ml", "train", ["GPU-1"])]);
  const changed = { ...pods[0]!, metadata: { ...pods[0]!.metadata, labels: { v: "2" } } };
  pipeline.apply("fake", [{ uid: "u-train", pod: changed }, { uid: "u-web", pod: pods[1]! }]);
  assert.ok(pipeline.cache.get("u-train")?.resources !== undefined, "kept across a pod change");
  pipeline.apply("fake", [{ uid: "u-web", pod: pods[1]! }]);
  const tomb = pipeline.query.lookup({ kind: "deviceId", id: "GPU-1" }, true);
  assert.equal(tomb?.deleted, true);
  assert.equal(tomb?.pod.uid, "u-train");
  assert.equal(pipeline.query.lookup({ kind: "deviceId", id: "GPU-1" }), undefined);
  pipeline.close();
});

Deno.test("QueryEngine.openWatch(): MODIFIED for an allocation only with resources: true", async () => {
  const { pipeline, pods } = setUp();
  const stop = new AbortController();
  const options = { selector: compileSelector({}), signal: stop.signal };
  const plain = pipeline.query.openWatch(options);
  const asking = pipeline.query.openWatch({ ...options, resources: true });
  const token = pipeline.query.token(pipeline.query.position);
  pipeline.applyResources([gpuPod("ml", "train", ["GPU-1"])]);
  // Then a change everybody sees, so the plain watch has something to yield.
  pipeline.apply("fake", [{ uid: "u-train", pod: pods[0]! }, {
    uid: "u-web",
    pod: makePod({ uid: "u-web", name: "web", namespace: "shop", phase: "Failed" }),
  }]);
  const plainItems = (await ready(plain, 4)).map((i) => `${i.type} ${i.pod?.uid ?? ""}`);
  assert.deepEqual(plainItems, [
    "ADDED u-train",
    "ADDED u-web",
    "INITIAL_SYNC_COMPLETE ",
    "MODIFIED u-web",
  ]);
  const askingItems = await ready(asking, 5);
  assert.deepEqual(askingItems.slice(3).map((i) => `${i.type} ${i.pod?.uid}`), [
    "MODIFIED u-train",
    "MODIFIED u-web",
  ]);
  // Resumed from before the allocation: the same rule.
  const resumedPlain = await ready(pipeline.query.openWatch({ ...options, resumeToken: token }), 1);
  assert.deepEqual(resumedPlain.map((i) => i.pod?.uid), ["u-web"]);
  const resumedAsking = await ready(
    pipeline.query.openWatch({ ...options, resumeToken: token, resources: true }),
    2,
  );
  assert.deepEqual(resumedAsking.map((i) => i.pod?.uid), ["u-train", "u-web"]);
  stop.abort();
  pipeline.close();
});

Deno.test("a selection on what pods hold: ADDED when a pod comes to hold it, DELETED when it stops", async () => {
  const { pipeline } = setUp();
  const stop = new AbortController();
  const watch = pipeline.query.openWatch({
    selector: compileSelector({ resourceName: "nvidia.com/gpu" }),
    signal: stop.signal,
  });
  const it = watch[Symbol.asyncIterator]();
  const next = async () => {
    const item = (await it.next()).value as WatchItem;
    return `${item.type} ${item.pod?.uid ?? ""}`;
  };
  assert.equal(await next(), "INITIAL_SYNC_COMPLETE ");
  pipeline.applyResources([gpuPod("ml", "train", ["GPU-1"])]);
  assert.equal(await next(), "ADDED u-train");
  pipeline.applyResources([gpuPod("ml", "train", ["GPU-1"])]);
  pipeline.applyResources([]);
  assert.equal(await next(), "DELETED u-train");
  assert.deepEqual(
    pipeline.query.list(compileSelector({ deviceId: "GPU-1" })).map((p) => p.uid),
    [],
  );
  stop.abort();
  pipeline.close();
});

Deno.test("QueryEngine.lookup() by device ID finds the holder; a shared device is ambiguous", () => {
  const { pipeline } = setUp();
  pipeline.applyResources([
    gpuPod("ml", "train", ["GPU-1", "GPU-2"]),
    gpuPod("shop", "web", ["GPU-2"]),
  ]);
  assert.equal(pipeline.query.lookup({ kind: "deviceId", id: "GPU-1" })?.pod.uid, "u-train");
  assert.throws(() => pipeline.query.lookup({ kind: "deviceId", id: "GPU-2" }), /2 pods hold it/);
  assert.equal(pipeline.query.lookup({ kind: "deviceId", id: "GPU-9" }), undefined);
  assert.deepEqual(
    pipeline.query.list(compileSelector({ deviceId: "GPU-2" })).map((p) => p.uid),
    ["u-train", "u-web"],
  );
  pipeline.close();
});
