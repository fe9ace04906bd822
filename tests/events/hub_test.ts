import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/pod_cache.ts";
import type { CachedPod, PodEvent, PodEventType, PodStore } from "../../src/cache/types.ts";
import { EventHub, type Subscription, type SubscriptionItem } from "../../src/events/hub.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { canonicalEncoder, FakeClock, makePod, makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";

const EMPTY_STORE: PodStore = { get: () => undefined, list: () => [], resourceVersion: 0 };

function hubOf(store: PodStore = EMPTY_STORE): { hub: EventHub; metrics: Metrics } {
  const metrics = createMetricsRegistry().metrics;
  return { hub: new EventHub({ store, metrics }), metrics };
}

function cached(uid: string, version: number, tag = String(version)): CachedPod {
  const pod = makePod({ uid, labels: { tag } });
  return { uid, pod, version, bytes: canonicalEncoder(pod) };
}

let seq = 0;
/** Builds an event; `prev` is the pod version the client last saw. */
function ev(type: PodEventType, uid: string, prev?: number): PodEvent {
  seq++;
  const pod = cached(uid, seq);
  if (prev === undefined) return { type, pod, seq };
  return { type, pod, seq, prev: cached(uid, prev) };
}

/** Takes every queued item without waiting. */
async function drain(sub: Subscription): Promise<PodEvent[]> {
  const events: PodEvent[] = [];
  while (sub.pending > 0) {
    const item = await sub.next();
    assert.equal(item.state, "event");
    if (item.state === "event") events.push(item.event);
  }
  return events;
}

function describe(events: readonly PodEvent[]): string[] {
  return events.map((e) =>
    `${e.type} ${e.pod.uid}@${e.seq}${e.prev ? ` prev@${e.prev.version}` : ""}`
  );
}

Deno.test("EventHub.subscribe() returns the store's snapshot sorted by UID", async () => {
  const cache = new PodCache({ encode: canonicalEncoder, clock: new FakeClock() });
  const { hub } = hubOf(cache);
  hub.publish(cache.apply([makeSnapshot({ uid: "c" }), makeSnapshot({ uid: "a" })]));
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal });
  assert.deepEqual(sub.snapshot.map((p) => p.uid), ["a", "c"]);
  assert.equal(sub.resourceVersion, 2);
  assert.equal(sub.pending, 0);
  hub.publish(cache.apply([makeSnapshot({ uid: "a" })]));
  const item = await sub.next();
  assert.equal(item.state, "event");
  assert.equal(item.state === "event" && item.event.type, "DELETED");
  controller.abort();
});

Deno.test("EventHub.subscribe() has no gap and no duplicate between snapshot and live events", async () => {
  const cache = new PodCache({ encode: canonicalEncoder, clock: new FakeClock() });
  const { hub } = hubOf(cache);
  hub.publish(cache.apply([makeSnapshot({ uid: "a", phase: "Pending" })]));
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal });
  // Changes published after subscribe() and before the first next().
  hub.publish(cache.apply([makeSnapshot({ uid: "a" }), makeSnapshot({ uid: "b" })]));
  // A change applied to the store but not yet published when a second watcher subscribes.
  const late = cache.apply([
    makeSnapshot({ uid: "a" }),
    makeSnapshot({ uid: "b" }),
    makeSnapshot({ uid: "c" }),
  ]);
  const second = hub.subscribe({ signal: controller.signal });
  hub.publish(late);
  assert.deepEqual(sub.snapshot.map((p) => `${p.uid}@${p.version}`), ["a@1"]);
  assert.deepEqual(describe(await drain(sub)), ["ADDED b@2", "MODIFIED a@3 prev@1", "ADDED c@4"]);
  assert.deepEqual(second.snapshot.map((p) => `${p.uid}@${p.version}`), ["a@3", "b@2", "c@4"]);
  assert.deepEqual(await drain(second), []);
  controller.abort();
});

Deno.test("EventHub coalesces pending events of the same pod", async (t) => {
  const cases: { name: string; events: () => PodEvent[]; want: string[]; coalesced: number }[] = [
    {
      name: "ADDED then MODIFIED gives ADDED with the new pod",
      events: () => [ev("ADDED", "a"), ev("MODIFIED", "a", seq)],
      want: ["ADDED a@+2"],
      coalesced: 1,
    },
    {
      name: "ADDED then DELETED gives nothing",
      events: () => [ev("ADDED", "a"), ev("DELETED", "a", seq)],
      want: [],
      coalesced: 2,
    },
    {
      name: "MODIFIED then MODIFIED keeps the older prev",
      events:
        () => [ev("MODIFIED", "a", 0), ev("MODIFIED", "a", seq), ev("MODIFIED", "a", seq + 1)],
      want: ["MODIFIED a@+3 prev@0"],
      coalesced: 2,
    },
    {
      name: "MODIFIED and MODIFIED back to what the client last saw give nothing",
      events: () => {
        const first = ev("MODIFIED", "a", 0);
        // The same bytes as the pod at version 0 (only its label tag is encoded).
        const back: PodEvent = {
          type: "MODIFIED",
          pod: cached("a", ++seq, "0"),
          seq,
          prev: first.pod,
        };
        return [first, back];
      },
      want: [],
      coalesced: 2,
    },
    {
      name: "MODIFIED then DELETED gives DELETED with the older prev",
      events: () => [ev("MODIFIED", "a", 0), ev("DELETED", "a", seq)],
      want: ["DELETED a@+2 prev@0"],
      coalesced: 1,
    },
    {
      name: "DELETED then ADDED of the same UID are both kept",
      events: () => [ev("DELETED", "a", 0), ev("ADDED", "a")],
      want: ["DELETED a@+1 prev@0", "ADDED a@+2"],
      coalesced: 0,
    },
    {
      name: "DELETED, ADDED, MODIFIED merges into the new lifetime",
      events: () => [ev("DELETED", "a", 0), ev("ADDED", "a"), ev("MODIFIED", "a", seq)],
      want: ["DELETED a@+1 prev@0", "ADDED a@+3"],
      coalesced: 1,
    },
    {
      name: "DELETED, ADDED, DELETED leaves the first DELETED",
      events: () => [ev("DELETED", "a", 0), ev("ADDED", "a"), ev("DELETED", "a", seq)],
      want: ["DELETED a@+1 prev@0"],
      coalesced: 2,
    },
    {
      name: "a merged event moves to the tail, other pods keep their order",
      events: () => [
        ev("MODIFIED", "a", 0),
        ev("MODIFIED", "b", 0),
        ev("MODIFIED", "c", 0),
        ev("MODIFIED", "a", seq - 2),
      ],
      want: ["MODIFIED b@+2 prev@0", "MODIFIED c@+3 prev@0", "MODIFIED a@+4 prev@0"],
      coalesced: 1,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const { hub, metrics } = hubOf();
      const controller = new AbortController();
      const sub = hub.subscribe({ signal: controller.signal });
      const base = seq;
      hub.publish(c.events());
      const want = c.want.map((s) => s.replace(/@\+(\d+)/, (_, n) => `@${base + Number(n)}`));
      assert.deepEqual(describe(await drain(sub)), want);
      assert.equal(await metricValue(metrics.watchEventsCoalesced), c.coalesced);
      controller.abort();
    });
  }
});

Deno.test("EventHub drops a slow subscriber with the exact lost count and spares a fast one", async () => {
  const { hub, metrics } = hubOf();
  const controller = new AbortController();
  const slow = hub.subscribe({ signal: controller.signal, queueLimit: 3, apiVersion: "v1" });
  const fast = hub.subscribe({ signal: controller.signal, queueLimit: 1 });
  const received: PodEvent[] = [];
  for (let i = 0; i < 6; i++) {
    // The fast watcher waits before each publish: the event goes straight to it.
    const next = fast.next();
    hub.publish([ev("ADDED", `pod-${i}`)]);
    const item = await next;
    assert.equal(item.state, "event");
    if (item.state === "event") received.push(item.event);
  }
  assert.equal(received.length, 6);
  assert.equal(slow.open, false);
  assert.deepEqual(await slow.next(), { state: "dropped", lost: 4 });
  assert.deepEqual(await slow.next(), { state: "dropped", lost: 4 });
  assert.equal(await metricValue(metrics.watchEventsDropped), 4);
  assert.equal(await metricValue(metrics.watchersDropped, { server_api_version: "v1" }), 1);
  assert.equal(hub.size, 1);
  controller.abort();
});

Deno.test("EventHub drops a merged MODIFIED that its watcher would not be sent", () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const pod = (version: number, tag: string, other: string): CachedPod => {
    const object = makePod({ uid: "a", labels: { tag, other } });
    return { uid: "a", pod: object, version, bytes: canonicalEncoder(object) };
  };
  // This watcher sees the `tag` label only, as a field mask would.
  const tagOf = (p: CachedPod) => p.pod.metadata.labels?.tag;
  const sub = hub.subscribe({
    signal: controller.signal,
    accept: (event) => event.prev === undefined || tagOf(event.prev) !== tagOf(event.pod),
  });
  const [v1, v2, v3] = [pod(1, "x", "1"), pod(2, "y", "1"), pod(3, "x", "2")];
  hub.publish([{ type: "MODIFIED", pod: v2, prev: v1, seq: 2 }]);
  assert.equal(sub.pending, 1, "tag x -> y: the watcher would be told");
  hub.publish([{ type: "MODIFIED", pod: v3, prev: v2, seq: 3 }]);
  assert.equal(sub.pending, 0, "back to tag x before it was told: nothing to tell");
  controller.abort();
});

Deno.test("EventHub keeps a slow subscriber whose queue stays bounded by coalescing", async () => {
  const { hub, metrics } = hubOf();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal, queueLimit: 2 });
  hub.publish([ev("MODIFIED", "a", 0), ev("MODIFIED", "b", 0)]);
  for (let i = 0; i < 50; i++) hub.publish([ev("MODIFIED", i % 2 ? "a" : "b", seq)]);
  assert.equal(sub.open, true);
  assert.equal((await drain(sub)).length, 2);
  assert.equal(await metricValue(metrics.watchEventsDropped), 0);
  assert.equal(await metricValue(metrics.watchEventsCoalesced), 50);
  controller.abort();
});

Deno.test("EventHub.subscribe() frees the subscriber when its signal aborts", async () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal });
  const other = new AbortController();
  const stays = hub.subscribe({ signal: other.signal });
  hub.publish([ev("ADDED", "a")]);
  await drain(sub);
  const waiting = sub.next();
  assert.equal(hub.size, 2);
  controller.abort();
  assert.deepEqual(await waiting, { state: "closed" });
  assert.equal(hub.size, 1);
  hub.publish([ev("ADDED", "b")]);
  assert.equal(sub.pending, 0);
  assert.deepEqual(await sub.next(), { state: "closed" });
  assert.equal(stays.pending, 2);
  other.abort();
  assert.equal(hub.size, 0);
  assert.equal(stays.pending, 0);
});

Deno.test("EventHub.subscribe() with an aborted signal is closed at once", async () => {
  const { hub } = hubOf();
  const sub = hub.subscribe({ signal: AbortSignal.abort() });
  assert.equal(hub.size, 0);
  assert.deepEqual(await sub.next(), { state: "closed" });
});

Deno.test("EventHub.close() ends every subscription", async () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const waiting = hub.subscribe({ signal: controller.signal });
  const queued = hub.subscribe({ signal: controller.signal });
  const next = waiting.next();
  hub.publish([ev("ADDED", "a")]);
  await next;
  const pending = waiting.next();
  hub.close();
  assert.deepEqual(await pending, { state: "closed" });
  assert.deepEqual(await queued.next(), { state: "closed" });
  assert.equal(hub.size, 0);
  assert.equal(hub.closed, true);
  const late = hub.subscribe({ signal: controller.signal });
  assert.deepEqual(await late.next(), { state: "closed" });
  controller.abort();
});

Deno.test("EventHub.subscribe() applies accept to MODIFIED events only", async () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal, accept: () => false });
  hub.publish([ev("ADDED", "a"), ev("MODIFIED", "a", seq), ev("DELETED", "b", 0)]);
  assert.deepEqual((await drain(sub)).map((e) => e.type), ["ADDED", "DELETED"]);
  controller.abort();
});

Deno.test("Subscription.next() rejects a second concurrent call", async () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal });
  const first = sub.next();
  await assert.rejects(sub.next(), TypeError);
  controller.abort();
  const item: SubscriptionItem = await first;
  assert.equal(item.state, "closed");
});

Deno.test("EventHub.subscribe() rejects a bad queue limit", () => {
  const { hub } = hubOf();
  for (const queueLimit of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => hub.subscribe({ signal: AbortSignal.abort(), queueLimit }), RangeError);
  }
});

Deno.test("Subscription.poll() takes what next() would have given, in order, without waiting", async () => {
  const { hub } = hubOf();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal, queueLimit: 3 });
  assert.equal(sub.poll(), undefined);
  hub.publish([ev("ADDED", "a"), ev("ADDED", "b")]);
  hub.publish([ev("ADDED", "c")]);
  const taken = [sub.poll()!];
  const item = await sub.next();
  assert.equal(item.state, "event");
  if (item.state === "event") taken.push(item.event);
  taken.push(sub.poll()!);
  assert.deepEqual(taken.map((e) => e.pod.uid), ["a", "b", "c"]);
  assert.ok(taken[0]!.seq < taken[1]!.seq && taken[1]!.seq < taken[2]!.seq);
  assert.equal(sub.pending, 0);
  assert.equal(sub.poll(), undefined);
  // Dropped: nothing to poll, and next() says why.
  hub.publish([ev("ADDED", "x"), ev("ADDED", "y")]);
  hub.publish([ev("ADDED", "z"), ev("ADDED", "w")]);
  assert.equal(sub.open, false);
  assert.equal(sub.poll(), undefined);
  assert.deepEqual(await sub.next(), { state: "dropped", lost: 4 });
  controller.abort();
});
