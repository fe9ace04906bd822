/**
 * A long randomized churn of a source's view through PodCache and EventHub,
 * with watchers of random speed. Each watcher's stream is replayed and
 * checked against the per-UID invariants of DESIGN.md §6.4; a watcher that was
 * not dropped must end with exactly the cache's pods.
 */

import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/pod_cache.ts";
import type { CachedPod, PodEvent } from "../../src/cache/types.ts";
import { EventHub, type Subscription, type SubscriptionItem } from "../../src/events/hub.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { type PodObject, podPhase } from "../../src/model/pod.ts";
import { canonicalEncoder, countingEncoder, FakeClock, makePod } from "../_fixtures/pods.ts";
import { prng } from "../_support/prng.ts";

/** Weighted: terminal phases are sticky, so they come rarely. */
const PHASES = [
  null,
  "",
  "Pending",
  "Pending",
  "Pending",
  "Running",
  "Running",
  "Running",
  "Running",
  "Unknown",
  "Succeeded",
  "Failed",
] as const;

function masked(pod: Readonly<PodObject>): string {
  return JSON.stringify([podPhase(pod) ?? "", pod.metadata.deletionTimestamp ?? ""]);
}

/** What a client knows of one pod. */
interface Seen {
  cached: CachedPod;
  everRunning: boolean;
}

class Watcher {
  readonly name: string;
  readonly sub: Subscription;
  readonly controller: AbortController;
  /** Items taken per step; `Infinity` drains. */
  readonly speed: number;
  readonly filtered: boolean;
  readonly eager: boolean;
  state = new Map<string, Seen>();
  lastSeq: number;
  events = 0;
  dropped: number | undefined;
  closed = false;
  waiting: Promise<void> | undefined;

  constructor(
    name: string,
    sub: Subscription,
    init: { controller: AbortController; speed: number; filtered: boolean; eager: boolean },
  ) {
    this.name = name;
    this.sub = sub;
    this.controller = init.controller;
    this.speed = init.speed;
    this.filtered = init.filtered;
    this.eager = init.eager;
    this.lastSeq = sub.resourceVersion;
    for (const cached of sub.snapshot) {
      assert.ok(!this.state.has(cached.uid), `${name}: duplicate UID in snapshot`);
      this.state.set(cached.uid, { cached, everRunning: podPhase(cached.pod) === "Running" });
    }
  }

  get done(): boolean {
    return this.dropped !== undefined || this.closed;
  }

  take(item: SubscriptionItem): void {
    if (item.state === "dropped") {
      this.dropped = item.lost;
      return;
    }
    if (item.state === "closed") {
      this.closed = true;
      return;
    }
    this.check(item.event);
  }

  check(event: PodEvent): void {
    const where = `${this.name} ${event.type} ${event.pod.uid}@${event.seq}`;
    this.events++;
    assert.ok(event.seq > this.lastSeq, `${where}: seq not increasing (last ${this.lastSeq})`);
    this.lastSeq = event.seq;
    assert.equal(event.pod.uid, event.pod.pod.metadata.uid, where);
    assert.deepEqual(event.pod.bytes, canonicalEncoder(event.pod.pod), `${where}: stale bytes`);
    const phase = podPhase(event.pod.pod);
    assert.ok(phase !== undefined && phase !== "", `${where}: empty phase`);
    const seen = this.state.get(event.pod.uid);
    if (event.type === "ADDED") {
      assert.equal(seen, undefined, `${where}: ADDED for a pod already seen`);
      this.state.set(event.pod.uid, { cached: event.pod, everRunning: phase === "Running" });
      return;
    }
    assert.ok(seen !== undefined, `${where}: ${event.type} before ADDED`);
    if (!this.filtered) {
      assert.equal(event.prev, seen.cached, `${where}: prev is not what was seen`);
    }
    const before = seen.cached.pod;
    const beforePhase = podPhase(before);
    if (before.metadata.deletionTimestamp !== undefined) {
      assert.equal(
        event.pod.pod.metadata.deletionTimestamp,
        before.metadata.deletionTimestamp,
        `${where}: deletionTimestamp changed or disappeared`,
      );
    }
    if (beforePhase === "Succeeded" || beforePhase === "Failed") {
      assert.equal(phase, beforePhase, `${where}: left terminal phase`);
    }
    if (seen.everRunning) assert.notEqual(phase, "Pending", `${where}: Running back to Pending`);
    if (event.type === "DELETED") {
      assert.ok(event.pod.pod.metadata.deletionTimestamp, `${where}: no deletionTimestamp`);
      this.state.delete(event.pod.uid);
      return;
    }
    seen.cached = event.pod;
    seen.everRunning ||= phase === "Running";
  }

  /** Takes up to `speed` queued items, never waiting. */
  async consume(): Promise<void> {
    let budget = this.speed;
    while (!this.done && budget-- > 0) {
      if (this.sub.pending === 0 && this.sub.open) break;
      this.take(await this.sub.next());
    }
    if (this.eager && !this.done && this.sub.pending === 0 && this.waiting === undefined) {
      this.waiting = this.sub.next().then((item) => {
        this.waiting = undefined;
        this.take(item);
      });
    }
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 4; i++) await Promise.resolve();
}

Deno.test("EventHub keeps every watch invariant under random churn", async (t) => {
  for (const seed of [1, 42, 20260101]) {
    await t.step(`seed ${seed}`, () => churn(seed, 4000));
  }
});

async function churn(seed: number, steps: number): Promise<void> {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const { metrics } = createMetricsRegistry();
  const clock = new FakeClock();
  const encoder = countingEncoder();
  const cache = new PodCache({ encode: encoder.encode, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const uids = Array.from({ length: 40 }, (_, i) => `pod-${String(i).padStart(3, "0")}`);
  const view = new Map<string, PodObject>();
  const watchers: Watcher[] = [];
  let made = 0;
  let published = 0;
  let lost = 0;
  let drops = 0;

  function spawn(options: { speed?: number; limit?: number; filtered?: boolean; eager?: boolean }) {
    const controller = new AbortController();
    const filtered = options.filtered ?? random() < 0.25;
    const sub = hub.subscribe({
      signal: controller.signal,
      queueLimit: options.limit ?? pick([1, 2, 5, 20, 100]),
      ...(filtered ? { accept: (e: PodEvent) => masked(e.prev!.pod) !== masked(e.pod.pod) } : {}),
    });
    watchers.push(
      new Watcher(`w${made++}`, sub, {
        controller,
        speed: options.speed ?? pick([0, 1, 2, 3, 5, 8, Infinity]),
        filtered,
        eager: options.eager ?? random() < 0.3,
      }),
    );
  }

  function mutate(): void {
    const uid = pick(uids);
    const pod = view.get(uid);
    if (pod === undefined) {
      if (random() < 0.5) {
        view.set(uid, makePod({ uid, name: uid, phase: pick(PHASES), labels: { gen: "0" } }));
      }
      return;
    }
    const op = random();
    if (op < 0.1) {
      view.delete(uid);
    } else if (op < 0.35) {
      view.set(uid, { ...pod, status: { ...pod.status, phase: pick(PHASES) ?? undefined } });
    } else if (op < 0.55) {
      const labels = { gen: String(Math.floor(random() * 3)) };
      view.set(uid, { ...pod, metadata: { ...pod.metadata, labels } });
    } else if (op < 0.7) {
      view.set(uid, structuredClone(pod));
    } else if (op < 0.8) {
      const deletionTimestamp = random() < 0.5 ? undefined : "2026-01-01T00:00:00Z";
      view.set(uid, { ...pod, metadata: { ...pod.metadata, deletionTimestamp } });
    } else if (op < 0.9) {
      view.set(
        uid,
        makePod({ uid, name: uid, phase: pick(PHASES), restartCount: Math.floor(random() * 3) }),
      );
    }
    // Else: no change, same object.
  }

  // Fixed watchers: a fast one that drains, a waiting one, a masked one, a very slow one.
  spawn({ speed: Infinity, limit: 100, filtered: false, eager: false });
  spawn({ speed: Infinity, limit: 100, filtered: false, eager: true });
  spawn({ speed: 2, limit: 100, filtered: true, eager: false });
  spawn({ speed: 0, limit: 5, filtered: false, eager: false });
  const FIXED = watchers.length;

  for (let step = 0; step < steps; step++) {
    const changes = Math.floor(random() * 5);
    for (let i = 0; i < changes; i++) mutate();
    const snapshots = [...view].map(([uid, pod]) => ({ uid, pod }));
    if (snapshots.length > 0 && random() < 0.05) snapshots.push(pick(snapshots));
    clock.advance(Math.floor(random() * 3000));
    const events = cache.apply(snapshots);
    published += events.length;
    for (let i = 1; i < events.length; i++) assert.ok(events[i]!.seq > events[i - 1]!.seq);
    hub.publish(events);
    await flushMicrotasks();
    if (random() < 0.03 && watchers.filter((w) => !w.done).length < 10) spawn({});
    for (const [i, watcher] of watchers.entries()) {
      if (i >= FIXED && !watcher.done && random() < 0.003) watcher.controller.abort();
      await watcher.consume();
    }
  }
  for (const watcher of watchers) {
    if (watcher.waiting === undefined) await watcher.consume();
  }
  await flushMicrotasks();
  assert.equal(cache.resourceVersion, published, "every change bumps resourceVersion once");

  let survivors = 0;
  for (const watcher of watchers) {
    // Drain what is left.
    while (!watcher.done && watcher.sub.pending > 0) watcher.take(await watcher.sub.next());
    if (!watcher.done && !watcher.sub.open) watcher.take(await watcher.sub.next());
    if (watcher.dropped !== undefined) {
      lost += watcher.dropped;
      drops++;
      continue;
    }
    if (watcher.done) continue;
    survivors++;
    const uidsSeen = [...watcher.state.keys()].sort();
    assert.deepEqual(uidsSeen, cache.list().map((p) => p.uid), `${watcher.name}: pod set differs`);
    for (const [uid, seen] of watcher.state) {
      const current = cache.get(uid)!;
      if (watcher.filtered) {
        assert.equal(masked(seen.cached.pod), masked(current.pod), watcher.name);
      } else {assert.equal(
          seen.cached,
          current,
          `${watcher.name}: ${uid} is not the cached version`,
        );}
    }
  }
  const [fast, waiting, masking, slow] = watchers;
  for (const watcher of [fast!, waiting!, masking!]) {
    assert.ok(!watcher.done, `${watcher.name} survives`);
  }
  assert.equal(fast!.events, published, "a watcher that keeps up gets every event");
  assert.equal(waiting!.events, published, "a watcher waiting in next() gets every event");
  assert.ok(masking!.events < published, "the masked watcher skips changes outside its mask");
  assert.ok(slow!.dropped !== undefined, "the slow watcher is dropped");
  assert.ok(survivors >= 3);
  hub.close();
  await flushMicrotasks();
  for (const watcher of watchers) {
    if (!watcher.done && watcher.waiting === undefined) watcher.take(await watcher.sub.next());
    assert.ok(watcher.done && watcher.waiting === undefined, `${watcher.name} ends`);
  }
  const dropped = (await metrics.watchEventsDropped.get()).values[0]?.value ?? 0;
  assert.equal(dropped, lost, "dropped counter equals the lost events");
  const droppedWatchers = (await metrics.watchersDropped.get()).values
    .reduce((sum, v) => sum + v.value, 0);
  assert.equal(droppedWatchers, drops);
  assert.ok(((await metrics.watchEventsCoalesced.get()).values[0]?.value ?? 0) > 0);
  assert.equal(hub.size, 0);
}
