import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/mod.ts";
import { EventHub } from "../../src/events/mod.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { canonicalEncoder, FakeClock, makeSnapshot } from "../_fixtures/pods.ts";

function setup() {
  const { metrics } = createMetricsRegistry();
  const cache = new PodCache({ encode: canonicalEncoder, clock: new FakeClock(), metrics });
  const hub = new EventHub({ store: cache, metrics });
  return { cache, hub };
}

function view(count: number, generation: number) {
  return Array.from({ length: count }, (_, i) =>
    makeSnapshot({
      uid: `uid-${String(i).padStart(4, "0")}`,
      name: `p${i}`,
      labels: { generation: String(generation) },
    }));
}

Deno.test("EventHub.publish() keeps a drained watcher when one batch exceeds its queue bound", async () => {
  const { cache, hub } = setup();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal, queueLimit: 5 });
  hub.publish(cache.apply(view(20, 0)));
  let received = 0;
  while (sub.pending > 0) {
    const item = await sub.next();
    assert.equal(item.state, "event");
    received++;
  }
  assert.equal(received, 20);
  controller.abort();
});

Deno.test("EventHub.publish() drops a watcher still behind from an earlier batch once over its bound", async () => {
  const { cache, hub } = setup();
  const controller = new AbortController();
  const sub = hub.subscribe({ signal: controller.signal, queueLimit: 5 });
  hub.publish(cache.apply(view(20, 0)));
  hub.publish(cache.apply(view(20, 1)));
  const item = await sub.next();
  assert.deepEqual(item, { state: "dropped", lost: 20 });
  controller.abort();
});

Deno.test("EventHub.subscribe() with deferLimitUntilLive keeps a watcher sending its snapshot", async () => {
  const { cache, hub } = setup();
  const controller = new AbortController();
  const sub = hub.subscribe({
    signal: controller.signal,
    queueLimit: 5,
    deferLimitUntilLive: true,
  });
  hub.publish(cache.apply(view(20, 0)));
  hub.publish(cache.apply(view(20, 1)));
  assert.equal(sub.pending, 20, "coalesced to one event per pod, not dropped");
  for (let i = 0; i < 20; i++) assert.equal((await sub.next()).state, "event");
  sub.markLive();
  hub.publish(cache.apply(view(20, 2)));
  hub.publish(cache.apply(view(20, 3)));
  assert.deepEqual(
    await sub.next(),
    { state: "dropped", lost: 20 },
    "once live, the bound applies",
  );
  controller.abort();
});

Deno.test("Subscription.markLive() lets a watcher work off its snapshot-time backlog, then bounds it", async () => {
  const { cache, hub } = setup();
  const controller = new AbortController();
  const sub = hub.subscribe({
    signal: controller.signal,
    queueLimit: 5,
    deferLimitUntilLive: true,
  });
  hub.publish(cache.apply(view(20, 0)));
  sub.markLive();
  hub.publish(cache.apply(view(20, 1)));
  assert.equal(sub.pending, 20, "20 pending within the backlog headroom: kept");
  for (let i = 0; i < 18; i++) assert.equal((await sub.next()).state, "event");
  hub.publish(cache.apply(view(20, 2)));
  assert.deepEqual(
    await sub.next(),
    { state: "dropped", lost: 20 },
    "headroom shrank as it drained",
  );
  controller.abort();
});

Deno.test("Subscription.markLive() lets go of the snapshot; a watcher that never defers keeps it", () => {
  const { cache, hub } = setup();
  cache.apply(view(3, 0));
  const controller = new AbortController();
  const deferred = hub.subscribe({ signal: controller.signal, deferLimitUntilLive: true });
  const plain = hub.subscribe({ signal: controller.signal });
  assert.equal(deferred.snapshot.length, 3);
  deferred.markLive();
  assert.deepEqual(deferred.snapshot, [], "a live watcher still holds its snapshot");
  assert.equal(
    plain.snapshot.length,
    3,
    "a subscriber that never went through markLive() lost its snapshot",
  );
  controller.abort();
});
