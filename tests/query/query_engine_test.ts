import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/mod.ts";
import { EventHub } from "../../src/events/mod.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodObject } from "../../src/model/pod.ts";
import {
  compileSelector,
  LookupError,
  type PodSelector,
  QueryEngine,
  type QueryWatch,
  ResumeTokenError,
  SELECT_ALL,
  WATCH_BATCH_ITEMS,
  type WatchItem,
} from "../../src/query/mod.ts";
import { canonicalEncoder, FakeClock, makePod } from "../_fixtures/pods.ts";

const ID_A = "a".repeat(12) + "1".repeat(52);
const ID_B = "a".repeat(12) + "2".repeat(52);
const ID_C = "c".repeat(64);

function withContainer(pod: PodObject, id: string): PodObject {
  return {
    ...pod,
    status: {
      ...pod.status,
      containerStatuses: [{ name: "app", containerID: `containerd://${id}`, ready: true }],
    },
  };
}

function setup(
  options: {
    maxEvents?: number;
    maxAgeMs?: number;
    ttl?: number;
    maxBytes?: number;
    tombstoneMaxBytes?: number;
  } = {},
) {
  const clock = new FakeClock();
  const metrics = createMetricsRegistry().metrics;
  const cache = new PodCache({ encode: canonicalEncoder, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const engine = new QueryEngine({
    store: cache,
    hub,
    clock,
    history: {
      maxAgeMs: options.maxAgeMs ?? 60_000,
      maxEvents: options.maxEvents ?? 100,
      ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
    },
    tombstoneTtlMs: options.ttl ?? 300_000,
    ...(options.tombstoneMaxBytes === undefined
      ? {}
      : { tombstoneMaxBytes: options.tombstoneMaxBytes }),
    incarnation: "test",
  });
  const apply = (pods: PodObject[]) => {
    const events = cache.apply(pods.map((pod) => ({ uid: pod.metadata.uid, pod })));
    engine.apply(events);
    hub.publish(events);
  };
  return { clock, cache, hub, engine, apply };
}

/** Reads `n` items of a watch. */
async function take(iterator: AsyncIterator<WatchItem>, n: number): Promise<WatchItem[]> {
  const out: WatchItem[] = [];
  while (out.length < n) {
    const r = await iterator.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

function brief(items: WatchItem[]): string[] {
  return items.map((i) => `${i.type}${i.pod ? ":" + i.pod.pod.metadata.name : ""}`);
}

function open(watch: QueryWatch): AsyncIterator<WatchItem> {
  return watch[Symbol.asyncIterator]();
}

Deno.test("QueryEngine.lookup() finds pods by name, container ID, prefix and IP", () => {
  const { engine, apply } = setup();
  const web = withContainer(
    makePod({ name: "web", namespace: "pay", podIP: "fd00::a", uid: "u-web" }),
    ID_A,
  );
  const api = withContainer(
    makePod({ name: "api", namespace: "pay", podIP: "10.0.0.5", uid: "u-api" }),
    ID_B,
  );
  const host = {
    ...withContainer(makePod({ name: "proxy", podIP: "192.168.1.1", uid: "u-host" }), ID_C),
  };
  host.spec = { ...host.spec, hostNetwork: true };
  apply([web, api, host]);
  const uid = (key: Parameters<QueryEngine["lookup"]>[0]) => engine.lookup(key)?.pod.uid;
  assert.equal(uid({ kind: "name", namespace: "pay", name: "web" }), "u-web");
  assert.equal(uid({ kind: "name", namespace: "other", name: "web" }), undefined);
  assert.equal(uid({ kind: "containerId", id: `containerd://${ID_A}` }), "u-web");
  assert.equal(uid({ kind: "containerId", id: ID_B }), "u-api");
  assert.equal(uid({ kind: "containerId", id: ID_B.slice(0, 14).toUpperCase() }), "u-api");
  assert.equal(uid({ kind: "containerId", id: "cccccccccccc" }), "u-host");
  assert.throws(() => engine.lookup({ kind: "containerId", id: ID_A.slice(0, 12) }), LookupError);
  assert.throws(() => engine.lookup({ kind: "containerId", id: "aaaa" }), LookupError);
  assert.equal(uid({ kind: "containerId", id: "b".repeat(20) }), undefined);
  assert.equal(uid({ kind: "podIp", ip: "FD00:0:0:0:0:0:0:A" }), "u-web");
  assert.equal(uid({ kind: "podIp", ip: "10.0.0.5" }), "u-api");
  assert.equal(uid({ kind: "podIp", ip: "192.168.1.1" }), undefined, "host network pods");
  assert.throws(() => engine.lookup({ kind: "podIp", ip: "10.0.0" }), LookupError);
});

Deno.test("QueryEngine.lookup() by name gives the newest pod, and follows key changes", () => {
  const { engine, apply } = setup();
  const old = makePod({ name: "db-0", uid: "u-old", creationTimestamp: "2026-01-01T00:00:00Z" });
  const recreated = makePod({
    name: "db-0",
    uid: "u-new",
    creationTimestamp: "2026-01-02T00:00:00Z",
    podIP: "10.0.0.9",
  });
  apply([old, recreated]);
  assert.equal(
    engine.lookup({ kind: "name", namespace: "default", name: "db-0" })?.pod.uid,
    "u-new",
  );
  apply([old, { ...recreated, status: { ...recreated.status, podIP: "10.0.0.10", podIPs: [] } }]);
  assert.equal(engine.lookup({ kind: "podIp", ip: "10.0.0.9" }), undefined);
  assert.equal(engine.lookup({ kind: "podIp", ip: "10.0.0.10" })?.pod.uid, "u-new");
});

Deno.test("QueryEngine keeps tombstones for the TTL and only with includeDeleted", () => {
  const { engine, apply, clock } = setup({ ttl: 1000 });
  const pod = withContainer(makePod({ name: "gone", uid: "u-gone", podIP: "10.0.0.7" }), ID_C);
  apply([pod]);
  apply([]);
  assert.equal(engine.lookup({ kind: "uid", uid: "u-gone" }), undefined);
  const found = engine.lookup({ kind: "uid", uid: "u-gone" }, true);
  assert.equal(found?.deleted, true);
  assert.ok(found?.pod.pod.metadata.deletionTimestamp);
  assert.equal(engine.lookup({ kind: "podIp", ip: "10.0.0.7" }, true)?.deleted, true);
  assert.equal(engine.lookup({ kind: "containerId", id: ID_C.slice(0, 12) }, true)?.deleted, true);
  assert.equal(
    engine.lookup({ kind: "name", namespace: "default", name: "gone" }, true)?.deleted,
    true,
  );
  clock.advance(1000);
  assert.equal(engine.lookup({ kind: "uid", uid: "u-gone" }, true), undefined);
  assert.equal(engine.tombstones, 0);
});

Deno.test("QueryEngine.list() selects and returns the same array for an unchanged cache", () => {
  const { engine, apply } = setup();
  apply([
    makePod({ name: "a", labels: { app: "x" } }),
    makePod({ name: "b", labels: { app: "y" } }),
    makePod({ name: "c", namespace: "kube-system", labels: { app: "x" } }),
  ]);
  const selector = compileSelector({ labelSelector: "app=x" });
  const first = engine.list(selector);
  assert.deepEqual(first.map((p) => p.pod.metadata.name), ["a", "c"]);
  assert.equal(engine.list(compileSelector({ labelSelector: "app = x" })), first);
  assert.deepEqual(
    engine.list(compileSelector({ namespace: "kube-system" })).map((p) => p.pod.metadata.name),
    ["c"],
  );
  assert.equal(engine.list(SELECT_ALL).length, 3);
});

Deno.test("a selected watch sees ADDED and DELETED as pods enter and leave the selection", async () => {
  const { engine, apply } = setup();
  const a = makePod({ name: "a", uid: "u-a", labels: { app: "x" } });
  const b = makePod({ name: "b", uid: "u-b", labels: { app: "y" } });
  apply([a, b]);
  const controller = new AbortController();
  const watch = engine.openWatch({
    selector: compileSelector({ labelSelector: "app=x" }),
    signal: controller.signal,
  });
  const it = open(watch);
  assert.deepEqual(brief(await take(it, 2)), ["ADDED:a", "INITIAL_SYNC_COMPLETE"]);
  const bx = { ...b, metadata: { ...b.metadata, labels: { app: "x" } } };
  const ay = { ...a, metadata: { ...a.metadata, labels: { app: "y" } } };
  const items: WatchItem[] = [];
  apply([a, bx]); // b enters
  items.push(...await take(it, 1));
  apply([ay, bx]); // a leaves
  items.push(...await take(it, 1));
  apply([ay, { ...bx, status: { phase: "Running", podIP: "10.0.0.1" } }]); // b changes
  items.push(...await take(it, 1));
  apply([ay]); // b deleted
  items.push(...await take(it, 1));
  assert.deepEqual(brief(items), ["ADDED:b", "DELETED:a", "MODIFIED:b", "DELETED:b"]);
  // The one that left is sent as it last matched.
  assert.equal(items[1]!.pod!.pod.metadata.labels!.app, "x");
  for (let i = 1; i < items.length; i++) assert.ok(items[i]!.position > items[i - 1]!.position);
  controller.abort();
  assert.equal((await it.next()).done, true);
});

Deno.test("a selected watch that falls behind sees nothing of a pod that entered and left meanwhile", async () => {
  const { engine, apply, clock } = setup();
  const b = makePod({ name: "b", uid: "u-b", labels: { app: "y" } });
  apply([b]);
  const controller = new AbortController();
  const it = open(
    engine.openWatch({
      selector: compileSelector({ labelSelector: "app=x" }),
      signal: controller.signal,
      bookmarkMs: 10,
    }),
  );
  assert.deepEqual(brief(await take(it, 1)), ["INITIAL_SYNC_COMPLETE"]);
  apply([{ ...b, metadata: { ...b.metadata, labels: { app: "x" } } }]);
  apply([]);
  const next = take(it, 1);
  await clock.waitForTimers(1);
  clock.advance(10);
  const items = await next;
  assert.deepEqual(brief(items), ["BOOKMARK"]);
  assert.equal(items[0]!.position, engine.position);
  controller.abort();
});

Deno.test("a watch resumed from a token gets exactly the changes after it, without a list", async () => {
  const { engine, apply } = setup();
  const pods = ["a", "b", "c"].map((name) => makePod({ name, uid: `u-${name}` }));
  apply(pods);
  const controller = new AbortController();
  const first = open(engine.openWatch({ selector: SELECT_ALL, signal: controller.signal }));
  const initial = await take(first, 4);
  const start = initial[3]!.position;
  apply(pods.slice(0, 2)); // c deleted
  const [deleted] = await take(first, 1);
  apply([pods[0]!, { ...pods[1]!, status: { phase: "Succeeded" } }]); // cut: nobody reads
  controller.abort();

  const again = new AbortController();
  const resumed = open(
    engine.openWatch({
      selector: SELECT_ALL,
      signal: again.signal,
      resumeToken: engine.token(deleted!.position),
    }),
  );
  const [next] = await take(resumed, 1);
  assert.equal(next!.type, "MODIFIED");
  assert.equal(next!.pod!.pod.metadata.name, "b");
  const fromStart = open(
    engine.openWatch({
      selector: SELECT_ALL,
      signal: again.signal,
      resumeToken: engine.token(start),
    }),
  );
  assert.deepEqual(brief(await take(fromStart, 2)), ["DELETED:c", "MODIFIED:b"]);
  again.abort();
});

Deno.test("QueryEngine.openWatch() refuses tokens too old, of another incarnation, or malformed", () => {
  const { engine, apply, clock } = setup({ maxEvents: 3, maxAgeMs: 10_000 });
  const signal = new AbortController().signal;
  for (let i = 0; i < 5; i++) apply([makePod({ name: "p", labels: { gen: String(i) } })]);
  const expired = (token: string) =>
    assert.throws(
      () => engine.openWatch({ selector: SELECT_ALL, signal, resumeToken: token }),
      (err: unknown) =>
        err instanceof ResumeTokenError && err.problem === "expired" &&
        err.message === "resume token too old; list again",
    );
  expired(engine.token(1));
  expired("other.5");
  assert.throws(
    () => engine.openWatch({ selector: SELECT_ALL, signal, resumeToken: "garbage" }),
    (err: unknown) => err instanceof ResumeTokenError && err.problem === "malformed",
  );
  const ok = engine.openWatch({ selector: SELECT_ALL, signal, resumeToken: engine.token(2) });
  assert.equal(ok.position, 5);
  clock.advance(10_001);
  expired(engine.token(4));
  // The newest position is always resumable: nothing after it is lost.
  engine.openWatch({ selector: SELECT_ALL, signal, resumeToken: engine.token(5) });
});

Deno.test("a watch with bookmarks gets one bookmarkMs after the last item sent, naming the position then", async () => {
  const { engine, apply, clock } = setup();
  const a = makePod({ name: "a", labels: { app: "x" } });
  const b = makePod({ name: "b" });
  apply([a, b]);
  const controller = new AbortController();
  const it = open(
    engine.openWatch({
      selector: compileSelector({ labelSelector: "app=x" }),
      signal: controller.signal,
      bookmarkMs: 1000,
    }),
  );
  assert.deepEqual(brief(await take(it, 2)), ["ADDED:a", "INITIAL_SYNC_COMPLETE"]);

  // Not before the period: a change at 999 ms comes first.
  const first = take(it, 1);
  await clock.waitForTimers(1);
  clock.advance(999);
  apply([{ ...a, status: { phase: "Failed" } }, b]);
  assert.deepEqual(brief(await first), ["MODIFIED:a"]);

  // The period restarts from that item; a change outside the selection
  // moves the position without sending anything, and postpones nothing.
  const second = take(it, 1);
  await clock.waitForTimers(1);
  clock.advance(500);
  apply([{ ...a, status: { phase: "Failed" } }, { ...b, status: { phase: "Failed" } }]);
  const moved = engine.position;
  clock.advance(500);
  const [bookmark] = await second;
  assert.equal(bookmark!.type, "BOOKMARK");
  assert.equal(bookmark!.position, moved);

  // And again a full period after the bookmark, not sooner.
  const third = take(it, 1);
  await clock.waitForTimers(1);
  clock.advance(999);
  assert.equal(clock.pendingTimers, 1, "the bookmark timer waits 1 ms more");
  clock.advance(1);
  assert.deepEqual(brief(await third), ["BOOKMARK"]);
  controller.abort();
  assert.equal((await it.next()).done, true);
  assert.equal(clock.pendingTimers, 0, "an ended watch leaves no timer behind");
});

Deno.test("history and tombstone bytes stay within their bounds under churn", () => {
  const maxBytes = 64 * 1024;
  const tombstoneMaxBytes = 16 * 1024;
  const { engine, apply, clock } = setup({
    maxEvents: 1_000_000,
    maxAgeMs: 3_600_000,
    ttl: 3_600_000,
    maxBytes,
    tombstoneMaxBytes,
  });
  let live: PodObject[] = [];
  let next = 0;
  let peakHistory = 0;
  let peakTombs = 0;
  for (let round = 0; round < 400; round++) {
    clock.advance(100);
    // Every round: one pod created, one restarted, one deleted once there are 20.
    live.push(
      makePod({ name: `p${next}`, uid: `u${next}`, podIP: `10.1.${next >> 8}.${next & 255}` }),
    );
    next++;
    const i = round % live.length;
    live[i] = { ...live[i]!, status: { ...live[i]!.status, message: `restart ${round}` } };
    if (live.length > 20) live = live.slice(1);
    apply(live);
    peakHistory = Math.max(peakHistory, engine.historyBytes);
    peakTombs = Math.max(peakTombs, engine.tombstoneBytes);
  }
  assert.ok(peakHistory <= maxBytes, `history ${peakHistory} > ${maxBytes}`);
  assert.ok(peakHistory > maxBytes / 2, `the bound was reached (${peakHistory})`);
  assert.ok(peakTombs <= tombstoneMaxBytes, `tombstones ${peakTombs} > ${tombstoneMaxBytes}`);
  assert.ok(engine.tombstones > 0 && engine.tombstones < 380, `${engine.tombstones} tombstones`);
  // What fell out of the bound is gone for resuming too.
  assert.ok(engine.historySize < 1100, `${engine.historySize} events retained`);
  assert.throws(() => engine.positionOf(engine.token(1)), ResumeTokenError);
  // The newest deleted pod is still there; the oldest is not.
  assert.equal(engine.lookup({ kind: "uid", uid: `u${next - 21}` }, true)?.deleted, true);
  assert.equal(engine.lookup({ kind: "uid", uid: "u0" }, true), undefined);
});

Deno.test("a count-bounded history keeps its bytes too", () => {
  const { engine, apply } = setup({ maxEvents: 10 });
  const pods = Array.from({ length: 30 }, (_, i) => makePod({ name: `p${i}`, uid: `u${i}` }));
  apply(pods);
  assert.equal(engine.historySize, 10);
  const perEvent = engine.historyBytes / 10;
  apply([]);
  assert.equal(engine.historySize, 10);
  // Each retained DELETED event is the only holder of the version before it.
  const bytes = engine.historyBytes;
  assert.ok(bytes > 10 * perEvent * 1.8 && bytes <= 10 * perEvent * 2.2, `${bytes}`);
});

Deno.test("QueryWatch.batches() gives the items in order: the list in batches, then what is queued", async () => {
  const { engine, apply } = setup();
  const count = WATCH_BATCH_ITEMS * 2 + 5;
  const pods = Array.from(
    { length: count },
    (_, i) => makePod({ name: `p${i}`, uid: `u-${String(i).padStart(4, "0")}` }),
  );
  apply(pods);
  const controller = new AbortController();
  const batches = engine.openWatch({ selector: SELECT_ALL, signal: controller.signal }).batches()[
    Symbol.asyncIterator
  ]();
  const sizes: number[] = [];
  const items: WatchItem[] = [];
  while (items.at(-1)?.type !== "INITIAL_SYNC_COMPLETE") {
    const { value } = await batches.next();
    sizes.push(value!.length);
    items.push(...value!);
  }
  assert.deepEqual(sizes, [WATCH_BATCH_ITEMS, WATCH_BATCH_ITEMS, 6]);
  assert.deepEqual(
    items.slice(0, -1).map((i) => i.pod!.uid),
    pods.map((p) => p.metadata.uid),
  );
  // Three relists while the watcher is away: one batch of their changes, in order.
  apply(pods.slice(1));
  apply(pods.slice(2));
  apply(pods.slice(2).map((p) => ({ ...p, status: { phase: "Running" } })));
  const live = (await batches.next()).value!;
  assert.deepEqual(brief([...live]).slice(0, 3), ["DELETED:p0", "DELETED:p1", "MODIFIED:p2"]);
  assert.equal(live.length, 2 + count - 2);
  for (let i = 1; i < live.length; i++) assert.ok(live[i]!.position > live[i - 1]!.position);
  controller.abort();
  assert.equal((await batches.next()).done, true);
});

Deno.test("watches opened on one list each get the whole list, selected watches their part", async () => {
  const { engine, apply } = setup();
  const count = WATCH_BATCH_ITEMS * 2 + 5;
  const pods = Array.from(
    { length: count },
    (_, i) =>
      makePod({
        name: `p${i}`,
        uid: `u-${String(i).padStart(4, "0")}`,
        labels: { half: i % 2 === 0 ? "even" : "odd" },
      }),
  );
  apply(pods);
  const controller = new AbortController();
  const initial = async (selector: PodSelector) => {
    const it = engine.openWatch({ selector, signal: controller.signal }).batches()[
      Symbol.asyncIterator
    ]();
    const batches: (readonly WatchItem[])[] = [];
    while (batches.at(-1)?.at(-1)?.type !== "INITIAL_SYNC_COMPLETE") {
      batches.push((await it.next()).value!);
    }
    return batches;
  };
  const first = await initial(SELECT_ALL);
  const second = await initial(SELECT_ALL);
  const even = await initial(compileSelector({ labelSelector: "half=even" }));
  const uids = (batches: (readonly WatchItem[])[]) =>
    batches.flat().filter((i) => i.pod !== undefined).map((i) => i.pod!.uid);
  assert.deepEqual(uids(first), pods.map((p) => p.metadata.uid));
  assert.deepEqual(uids(second), uids(first));
  assert.deepEqual(second.map((b) => b.length), [WATCH_BATCH_ITEMS, WATCH_BATCH_ITEMS, 6]);
  for (let i = 0; i < first.length; i++) {
    assert.notEqual(first[i], second[i], "a batch given twice");
  }
  assert.deepEqual(uids(even), pods.filter((_, i) => i % 2 === 0).map((p) => p.metadata.uid));
  assert.deepEqual(even.map((b) => b.length), [WATCH_BATCH_ITEMS, 4]);
  controller.abort();
});
