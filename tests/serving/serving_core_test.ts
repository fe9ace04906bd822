// The serving core alone: admission of reads (buckets, shutdown, sync gate),
// the one pool of watch slots across surfaces, what gives a slot back, the
// watch queue bound, and the counting of every refusal by surface and reason.
import assert from "node:assert/strict";
import { ResumeTokenError, SELECT_ALL, WatchDroppedError } from "../../src/query/mod.ts";
import { Refusal, type RefusalReason, WatchSlots } from "../../src/serving/mod.ts";
import type { Surface } from "../../src/metrics/metrics.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";
import { type InProcessCore, inProcessCore } from "../_support/in_process_core.ts";
import { metricValue } from "../_support/metric_value.ts";

/** The reason a call was refused, or `"admitted"`. */
function outcome(call: () => unknown): RefusalReason | "admitted" {
  try {
    call();
  } catch (err) {
    assert.ok(err instanceof Refusal, `unexpected ${err}`);
    return err.reason;
  }
  return "admitted";
}

function watchOn(c: InProcessCore, surface: Surface, signal = new AbortController().signal) {
  return c.core.openWatch({ surface, selector: SELECT_ALL, signal });
}

const PODS = [makeSnapshot({ uid: "u-a", name: "a" }), makeSnapshot({ uid: "u-b", name: "b" })];

Deno.test("admit() refuses a read for an empty bucket, shutdown or sources not synced, and counts it", async (t) => {
  const cases: { reason: RefusalReason; arrange(c: InProcessCore): void }[] = [
    { reason: "rate_limited", arrange: (c) => c.limiter.tokens = 0 },
    { reason: "not_synced", arrange: (c) => c.gate.isOpen = false },
    { reason: "shutting_down", arrange: (c) => c.shutdown.abort() },
  ];
  for (const { reason, arrange } of cases) {
    await t.step(reason, async () => {
      const c = inProcessCore();
      assert.equal(outcome(() => c.core.admit("http", "list", "10.0.0.1:5")), "admitted");
      arrange(c);
      for (const surface of ["v1alpha1", "v1", "podsapi_v1", "http"] as const) {
        assert.equal(outcome(() => c.core.admit(surface, "get", {})), reason);
        assert.equal(await metricValue(c.metrics.refused, { surface, reason }), 1);
      }
    });
  }
  await t.step("a read refused by a bucket is also counted by method", async () => {
    const c = inProcessCore();
    c.limiter.tokens = 0;
    outcome(() => c.core.admit("podsapi_v1", "list", {}));
    outcome(() => c.core.admit("http", "get", "10.0.0.1:5"));
    assert.equal(await metricValue(c.metrics.rateLimited, { method: "list" }), 1);
    assert.equal(await metricValue(c.metrics.rateLimited, { method: "get" }), 1);
  });
});

Deno.test("admit() draws from the connection's bucket on PodQuery and HTTP, never on the Pods services", () => {
  const c = inProcessCore({ connectionLimit: { qps: 1, burst: 2 } });
  const noisy = {};
  for (const surface of ["podsapi_v1", "http"] as const) {
    const connection = surface === "http" ? "10.0.0.1:5" : noisy;
    assert.equal(outcome(() => c.core.admit(surface, "list", connection)), "admitted");
    assert.equal(outcome(() => c.core.admit(surface, "list", connection)), "admitted");
    assert.equal(outcome(() => c.core.admit(surface, "list", connection)), "rate_limited");
    const other = surface === "http" ? "10.0.0.2:5" : {};
    assert.equal(outcome(() => c.core.admit(surface, "list", other)), "admitted");
  }
  // DESIGN.md §8: the kubelet's services share one bucket and nothing else.
  for (let i = 0; i < 5; i++) {
    assert.equal(outcome(() => c.core.admit("v1alpha1", "list", noisy)), "admitted");
    assert.equal(outcome(() => c.core.admit("v1", "get", noisy)), "admitted");
  }
  c.clock.advance(1000);
  assert.equal(outcome(() => c.core.admit("podsapi_v1", "list", noisy)), "admitted");
});

Deno.test("openWatch() takes one slot of one pool, whatever the surface", async () => {
  const c = inProcessCore({ maxWatchers: 4 });
  c.apply(PODS);
  const open = (["v1alpha1", "v1", "podsapi_v1", "http"] as const).map((s) => watchOn(c, s));
  assert.equal(c.core.watchers, 4);
  for (const surface of ["v1alpha1", "v1", "podsapi_v1", "http"] as const) {
    assert.equal(outcome(() => watchOn(c, surface)), "too_many_watchers");
    assert.equal(
      await metricValue(c.metrics.refused, { surface, reason: "too_many_watchers" }),
      1,
    );
    assert.equal(await metricValue(c.metrics.watchers, { "server_api_version": surface }), 1);
  }
  open[3]!.close();
  open[3]!.close();
  assert.equal(c.core.watchers, 3, "a second close gives nothing back twice");
  assert.equal(await metricValue(c.metrics.watchers, { "server_api_version": "http" }), 0);
  const again = watchOn(c, "v1");
  assert.equal(c.core.watchers, 4);
  for (const w of [...open, again]) w.close();
  assert.equal(c.core.watchers, 0);
});

Deno.test("a watch's slot comes back when its client leaves, on shutdown, and never for a bad token", () => {
  const c = inProcessCore({ maxWatchers: 3 });
  c.apply(PODS);
  const client = new AbortController();
  const w = watchOn(c, "http", client.signal);
  assert.equal(c.core.watchers, 1);
  client.abort();
  assert.equal(c.core.watchers, 0, "the client's end frees the slot at once");
  assert.ok(w.signal.aborted);

  assert.throws(
    () =>
      c.core.openWatch({
        surface: "podsapi_v1",
        selector: SELECT_ALL,
        resumeToken: "not-a-token",
        signal: new AbortController().signal,
      }),
    ResumeTokenError,
  );
  assert.equal(c.core.watchers, 0, "a refused token keeps no slot");

  const gone = new AbortController();
  gone.abort();
  const late = watchOn(c, "v1", gone.signal);
  assert.ok(late.signal.aborted, "a client gone before its watch opened");
  assert.equal(c.core.watchers, 0, "a client gone before its watch opened keeps no slot");

  const kept = [watchOn(c, "v1alpha1"), watchOn(c, "http")];
  assert.equal(c.core.watchers, 2);
  c.shutdown.abort();
  assert.equal(c.core.watchers, 0, "shutdown ends every watch");
  assert.ok(kept.every((k) => k.signal.aborted));
  assert.equal(outcome(() => watchOn(c, "v1")), "shutting_down");
});

Deno.test("openWatch() refuses while sources are not synced, before taking a slot", async () => {
  const c = inProcessCore({ maxWatchers: 1 });
  c.gate.isOpen = false;
  assert.equal(outcome(() => watchOn(c, "http")), "not_synced");
  assert.equal(c.core.watchers, 0);
  assert.equal(await metricValue(c.metrics.refused, { surface: "http", reason: "not_synced" }), 1);
});

Deno.test("a served watch is dropped past the core's queue bound, counted under its surface", async () => {
  const c = inProcessCore({ watchQueueLimit: 1 });
  c.apply(PODS);
  const w = watchOn(c, "http");
  const items = w[Symbol.asyncIterator]();
  const types = [];
  for (let i = 0; i < 3; i++) types.push((await items.next()).value?.type);
  assert.deepEqual(types, ["ADDED", "ADDED", "INITIAL_SYNC_COMPLETE"]);
  // Live now, and not reading: each relist changes both pods.
  const pending = items.next();
  for (let round = 1; round <= 3; round++) {
    c.apply(
      PODS.map((p) => makeSnapshot({ uid: p.uid, name: p.pod.metadata.name, restartCount: round })),
    );
  }
  await pending;
  await assert.rejects(async () => {
    for (;;) if ((await items.next()).done) return;
  }, WatchDroppedError);
  assert.equal(await metricValue(c.metrics.watchersDropped, { "server_api_version": "http" }), 1);
  assert.ok(await metricValue(c.metrics.watchEventsDropped) > 0);
  w.close();
  assert.equal(c.core.watchers, 0);
});

Deno.test("WatchSlots gives each slot back once and refuses a limit below 1", () => {
  const slots = new WatchSlots(2);
  const a = slots.tryTake()!;
  const b = slots.tryTake()!;
  assert.equal(slots.tryTake(), undefined);
  a();
  a();
  assert.equal(slots.used, 1);
  assert.ok(slots.tryTake());
  b();
  assert.equal(slots.used, 1);
  for (const bad of [0, -1, 1.5, NaN]) assert.throws(() => new WatchSlots(bad), RangeError);
});
