import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/pod_cache.ts";
import { diffPods } from "../../src/cache/diff.ts";
import type { PodEvent } from "../../src/cache/types.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { type PodObject, podPhase, type PodSnapshot } from "../../src/model/pod.ts";
import {
  canonicalEncoder,
  countingEncoder,
  FakeClock,
  makePod,
  makeSnapshot,
} from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";

function setup(): {
  cache: PodCache;
  metrics: Metrics;
  clock: FakeClock;
  encoder: ReturnType<typeof countingEncoder>;
} {
  const metrics = createMetricsRegistry().metrics;
  const clock = new FakeClock();
  const encoder = countingEncoder();
  const cache = new PodCache({ encode: encoder.encode, clock, metrics });
  return { cache, metrics, clock, encoder };
}

function kinds(events: readonly PodEvent[]): string[] {
  return events.map((e) => `${e.type} ${e.pod.uid}`);
}

function snap(pod: PodObject): PodSnapshot {
  return { uid: pod.metadata.uid, pod };
}

Deno.test("PodCache.apply() reports new pods as ADDED with increasing seq", () => {
  const { cache } = setup();
  const events = cache.apply([makeSnapshot({ uid: "b" }), makeSnapshot({ uid: "a" })]);
  assert.deepEqual(kinds(events), ["ADDED b", "ADDED a"]);
  assert.deepEqual(events.map((e) => e.seq), [1, 2]);
  assert.equal(cache.resourceVersion, 2);
  assert.deepEqual(cache.list().map((p) => p.uid), ["a", "b"]);
  assert.equal(cache.get("a")?.version, 2);
  assert.equal(cache.get("missing"), undefined);
});

Deno.test("PodCache.apply() skips an identical object without encoding it", () => {
  const { cache, encoder } = setup();
  const view = [makeSnapshot({ uid: "a" }), makeSnapshot({ uid: "b" })];
  cache.apply(view);
  assert.equal(encoder.calls, 2);
  for (let i = 0; i < 5; i++) assert.deepEqual(cache.apply(view), []);
  assert.equal(encoder.calls, 2);
  // A new array holding the same objects is just as cheap.
  assert.deepEqual(cache.apply([view[1]!, view[0]!]), []);
  assert.equal(encoder.calls, 2);
  assert.equal(cache.resourceVersion, 2);
});

Deno.test("PodCache.apply() reports nothing for a new object with equal bytes", () => {
  const { cache, encoder } = setup();
  cache.apply([makeSnapshot({ uid: "a", labels: { app: "x" } })]);
  const before = cache.get("a");
  const events = cache.apply([makeSnapshot({ uid: "a", labels: { app: "x" } })]);
  assert.deepEqual(events, []);
  assert.equal(encoder.calls, 2);
  assert.equal(cache.resourceVersion, 1);
  assert.equal(cache.get("a"), before);
  // The new object is now the reference: handing it back again costs nothing.
});

Deno.test("PodCache.apply() bumps versions only on content change", () => {
  const { cache, encoder } = setup();
  const a = makeSnapshot({ uid: "a" });
  cache.apply([a, makeSnapshot({ uid: "b", phase: "Pending" })]);
  const aVersion = cache.get("a")!.version;
  const changed = makeSnapshot({ uid: "b", phase: "Running" });
  const events = cache.apply([a, changed]);
  assert.deepEqual(kinds(events), ["MODIFIED b"]);
  const [event] = events;
  assert.equal(event!.seq, 3);
  assert.equal(event!.prev?.version, 2);
  assert.equal(event!.pod.version, 3);
  assert.equal(podPhase(event!.prev!.pod), "Pending");
  assert.equal(podPhase(event!.pod.pod), "Running");
  assert.equal(cache.get("a")!.version, aVersion);
  assert.equal(encoder.calls, 3);
  // Same object again: no encode, no event.
  assert.deepEqual(cache.apply([a, changed]), []);
  assert.equal(encoder.calls, 3);
});

Deno.test("PodCache.apply() reports a missing pod as DELETED with deletionTimestamp", () => {
  const { cache, clock, encoder } = setup();
  cache.apply([makeSnapshot({ uid: "a" }), makeSnapshot({ uid: "b" })]);
  clock.advance(61_500);
  const events = cache.apply([makeSnapshot({ uid: "b" })]);
  assert.deepEqual(kinds(events), ["DELETED a"]);
  const [event] = events;
  assert.equal(event!.pod.pod.metadata.deletionTimestamp, "2026-01-01T00:01:01Z");
  assert.equal(event!.prev?.pod.metadata.deletionTimestamp, undefined);
  assert.equal(event!.seq, 3);
  assert.equal(event!.pod.version, 3);
  assert.deepEqual(event!.pod.bytes, canonicalEncoder(event!.pod.pod));
  // The rest of the pod is its last known state.
  assert.deepEqual(event!.pod.pod.status, event!.prev?.pod.status);
  assert.equal(cache.get("a"), undefined);
  assert.deepEqual(cache.list().map((p) => p.uid), ["b"]);
  assert.equal(encoder.calls, 4);
});

Deno.test("PodCache.apply() keeps an existing deletionTimestamp on DELETED and encodes nothing", () => {
  const { cache, encoder } = setup();
  cache.apply([makeSnapshot({ uid: "a", deletionTimestamp: "2026-01-01T00:00:30Z" })]);
  const events = cache.apply([]);
  assert.equal(events[0]?.type, "DELETED");
  assert.equal(events[0]?.pod.pod.metadata.deletionTimestamp, "2026-01-01T00:00:30Z");
  assert.equal(events[0]?.pod.bytes, events[0]?.prev?.bytes);
  assert.equal(encoder.calls, 1);
});

Deno.test("PodCache.apply() reports a reappearing UID as ADDED again", () => {
  const { cache } = setup();
  const a = makeSnapshot({ uid: "a" });
  cache.apply([a]);
  cache.apply([]);
  const events = cache.apply([a]);
  assert.deepEqual(kinds(events), ["ADDED a"]);
  assert.equal(events[0]?.pod.pod.metadata.deletionTimestamp, undefined);
});

Deno.test("PodCache.apply() keeps the last of duplicate UIDs and counts them", async () => {
  const { cache, metrics } = setup();
  const events = cache.apply([
    makeSnapshot({ uid: "a", phase: "Pending" }),
    makeSnapshot({ uid: "a", phase: "Running" }),
    makeSnapshot({ uid: "a", phase: "Failed" }),
  ]);
  assert.deepEqual(kinds(events), ["ADDED a"]);
  assert.equal(podPhase(cache.get("a")!.pod), "Failed");
  const rejected = await metricValue(metrics.sourceItemsRejected, { reason: "duplicate_uid" });
  assert.equal(rejected, 2);
});

Deno.test("PodCache.apply() enforces the watch invariants", async (t) => {
  const cases: {
    name: string;
    steps: readonly (string | null)[];
    want: readonly string[];
    kind?: string;
  }[] = [
    { name: "empty phase becomes Pending", steps: [null], want: ["Pending"], kind: "phase_empty" },
    {
      name: "empty string phase becomes Pending",
      steps: [""],
      want: ["Pending"],
      kind: "phase_empty",
    },
    {
      name: "Running never goes back to Pending",
      steps: ["Running", "Pending"],
      want: ["Running", "Running"],
      kind: "phase_regression",
    },
    {
      name: "Running then Unknown never becomes Pending",
      steps: ["Running", "Unknown", "Pending"],
      want: ["Running", "Unknown", "Unknown"],
      kind: "phase_regression",
    },
    {
      name: "Running then empty keeps Running",
      steps: ["Running", null],
      want: ["Running", "Running"],
      kind: "phase_regression",
    },
    {
      name: "Succeeded is terminal",
      steps: ["Succeeded", "Running"],
      want: ["Succeeded", "Succeeded"],
      kind: "phase_terminal",
    },
    {
      name: "Failed is terminal, even towards Succeeded",
      steps: ["Failed", "Succeeded"],
      want: ["Failed", "Failed"],
      kind: "phase_terminal",
    },
    {
      name: "Pending to Running is fine",
      steps: ["Pending", "Running"],
      want: ["Pending", "Running"],
    },
    {
      name: "Running to Unknown is fine",
      steps: ["Running", "Unknown"],
      want: ["Running", "Unknown"],
    },
    {
      name: "Unknown to Pending is fine if never Running",
      steps: ["Unknown", "Pending"],
      want: ["Unknown", "Pending"],
    },
    {
      name: "Running to Failed is fine",
      steps: ["Running", "Failed"],
      want: ["Running", "Failed"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const { cache, metrics } = setup();
      const seen: string[] = [];
      for (const [i, phase] of c.steps.entries()) {
        // A label per step, so every step is a content change.
        cache.apply([makeSnapshot({ uid: "a", phase, labels: { step: String(i) } })]);
        seen.push(podPhase(cache.get("a")!.pod) ?? "");
      }
      assert.deepEqual(seen, c.want);
      if (c.kind !== undefined) {
        assert.ok(await metricValue(metrics.invariantCorrections, { kind: c.kind }) >= 1);
      } else {
        const { values } = await metrics.invariantCorrections.get();
        assert.deepEqual(values.filter((v) => v.value > 0), []);
      }
    });
  }
  await t.step("deletionTimestamp never disappears", async () => {
    const { cache, metrics } = setup();
    cache.apply([makeSnapshot({ uid: "a", deletionTimestamp: "2026-01-01T00:00:09Z" })]);
    const events = cache.apply([makeSnapshot({ uid: "a", labels: { x: "y" } })]);
    assert.equal(events[0]?.type, "MODIFIED");
    assert.equal(events[0]?.pod.pod.metadata.deletionTimestamp, "2026-01-01T00:00:09Z");
    assert.deepEqual(events[0]?.pod.pod.metadata.labels, { x: "y" });
    assert.equal(
      await metricValue(metrics.invariantCorrections, { kind: "deletion_timestamp" }),
      1,
    );
  });
  await t.step("a corrected pod the source keeps handing back is skipped", () => {
    const { cache, encoder } = setup();
    const running = makePod({ uid: "a", phase: "Running" });
    cache.apply([snap(running)]);
    const regressed = snap({ ...running, status: { ...running.status, phase: "Pending" } });
    assert.deepEqual(cache.apply([regressed]), []);
    const calls = encoder.calls;
    assert.deepEqual(cache.apply([regressed]), []);
    assert.equal(encoder.calls, calls);
  });
  await t.step("the source's object is never modified", () => {
    const { cache } = setup();
    const pod = makePod({ uid: "a", phase: null });
    const frozen = structuredClone(pod);
    cache.apply([snap(pod)]);
    assert.deepEqual(pod, frozen);
  });
});

Deno.test("PodCache.list() keeps a handed-out array unchanged", () => {
  const { cache } = setup();
  cache.apply([makeSnapshot({ uid: "b" }), makeSnapshot({ uid: "a" })]);
  const first = cache.list();
  assert.equal(cache.list(), first);
  assert.ok(Object.isFrozen(first));
  cache.apply([makeSnapshot({ uid: "b" }), makeSnapshot({ uid: "a", phase: "Failed" })]);
  const second = cache.list();
  assert.notEqual(second, first);
  assert.equal(podPhase(first[0]!.pod), "Running");
  assert.equal(podPhase(second[0]!.pod), "Failed");
  cache.apply([makeSnapshot({ uid: "c" }), makeSnapshot({ uid: "a", phase: "Failed" })]);
  assert.deepEqual(cache.list().map((p) => p.uid), ["a", "c"]);
  assert.deepEqual(second.map((p) => p.uid), ["a", "b"]);
});

Deno.test("PodCache.apply() updates the cache gauges and event counters", async () => {
  const { cache, metrics } = setup();
  cache.apply([
    makeSnapshot({ uid: "a", containers: ["x", "y"], initContainers: ["init"] }),
    makeSnapshot({ uid: "b" }),
  ]);
  assert.equal(await metricValue(metrics.cachePods), 2);
  assert.equal(await metricValue(metrics.cacheContainers), 4);
  cache.apply([makeSnapshot({ uid: "a", containers: ["x"] })]);
  assert.equal(await metricValue(metrics.cachePods), 1);
  assert.equal(await metricValue(metrics.cacheContainers), 1);
  assert.equal(await metricValue(metrics.podEvents, { type: "ADDED" }), 2);
  assert.equal(await metricValue(metrics.podEvents, { type: "MODIFIED" }), 1);
  assert.equal(await metricValue(metrics.podEvents, { type: "DELETED" }), 1);
});

Deno.test("PodCache works without metrics", () => {
  const cache = new PodCache({ encode: canonicalEncoder, clock: new FakeClock() });
  cache.apply([makeSnapshot({ uid: "a", phase: null })]);
  assert.equal(cache.apply([]).length, 1);
  assert.equal(cache.size, 0);
});

Deno.test("diffPods() sorts new, replaced and removed pods by identity", () => {
  const a = makePod({ uid: "a" });
  const b = makePod({ uid: "b" });
  const stored = new Map([["a", { input: a }], ["b", { input: b }], ["c", { input: b }]]);
  const diff = diffPods(stored, [
    snap(makePod({ uid: "d" })),
    snap(a),
    snap(makePod({ uid: "b" })),
  ]);
  assert.deepEqual(diff.added.map((s) => s.uid), ["d"]);
  assert.deepEqual(diff.replaced.map((s) => s.uid), ["b"]);
  assert.deepEqual(diff.removed, ["c"]);
  assert.equal(diff.duplicates, 0);
});
