// PodInformer against the real daemon in its own process: SIGKILL restarts and cut connections
// while the node changes; on PodQuery (resume) and on a kubelet's v1alpha1.Pods (relist). The
// changes are static pod manifests the test edits one at a time, each awaited until the
// watchers saw it: no fixed sleep, no race with real-time churn, so every change must arrive.
import assert from "node:assert/strict";
import {
  GrpcError,
  type InformerRetry,
  PodInformer,
  type PodObject,
  PodQueryClient,
  PodsClient,
  STATUS,
} from "../../src/client/mod.ts";
import { startKubeletLikeServer } from "../_support/kubelet_like_server.ts";
import { pollUntil } from "../_support/poll.ts";
import { startSocketProxy } from "../_support/socket_proxy.ts";
import { startSimDaemon } from "./_sim_daemon.ts";
import { StaticPods } from "./_static_pods.ts";

interface Seen {
  readonly phase: number;
  readonly type: "add" | "update" | "delete";
  readonly uid: string;
  readonly json: string;
  readonly oldJson?: string;
}

/** Every version of every pod one direct watch saw, per UID, in order. */
interface ReferenceWatch {
  readonly versions: Map<string, string[]>;
  /** Resolves once the watch has its initial list. */
  readonly synced: Promise<void>;
  readonly done: Promise<void>;
  /** The daemon the watch is on: asked for its list when a change does not arrive. */
  readonly client: PodsClient;
  /** Why the watch ended, once it did. */
  readonly ended: { error?: unknown } | undefined;
}

function recordVersions(client: PodsClient, signal: AbortSignal): ReferenceWatch {
  const versions = new Map<string, string[]>();
  const synced = Promise.withResolvers<void>();
  const ref: { ended: { error?: unknown } | undefined } = { ended: undefined };
  const done = (async () => {
    try {
      for await (const event of client.watchPods({ signal })) {
        if (event.type === "INITIAL_SYNC_COMPLETE") synced.resolve();
        if (event.pod === undefined) continue;
        const list = versions.get(event.pod.metadata.uid) ?? [];
        list.push(JSON.stringify(event.pod));
        versions.set(event.pod.metadata.uid, list);
      }
      ref.ended = {};
    } catch (error) {
      // The daemon was killed: what was seen stays.
      ref.ended = { error };
    }
    synced.reject(new Error("The reference watch ended before its initial list"));
  })();
  synced.promise.catch(() => {});
  return {
    versions,
    synced: synced.promise,
    done,
    client,
    get ended() {
      return ref.ended;
    },
  };
}

function byUid(pods: readonly PodObject[]): Map<string, string> {
  return new Map(pods.map((p) => [p.metadata.uid, JSON.stringify(p)]));
}

/** Waits for a condition: a bound on a hang, not a timing assertion. */
function waitUntil(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  return pollUntil(check, what, 30_000);
}

function genOf(json: string | undefined): string | undefined {
  return json === undefined ? undefined : JSON.parse(json).metadata.labels?.gen;
}

/** Whether every static pod in `gens` (by UID) is at the expected gen. */
function atGens(gens: (uid: string) => string | undefined, expected: Map<string, string>): boolean {
  return [...expected].every(([uid, gen]) => gens(uid) === gen);
}

function informerGen(informer: PodInformer): (uid: string) => string | undefined {
  const store = byUid(informer.list());
  return (uid) => genOf(store.get(uid));
}

function referenceGen(ref: ReferenceWatch): (uid: string) => string | undefined {
  return (uid) => genOf(ref.versions.get(uid)?.at(-1));
}

/**
 * Bumps each of `which` once, then waits until the reference watch (and the
 * informer, when it is connected) saw every static pod at its new gen. When
 * one does not arrive, the error says who is behind: the daemon's own list,
 * the reference watch (and whether it ended), the informer.
 */
async function change(
  pods: StaticPods,
  which: readonly number[],
  ref: ReferenceWatch,
  informer?: PodInformer,
): Promise<void> {
  for (const i of which) {
    await pods.bump(i);
    const expected = pods.expected();
    try {
      await waitUntil(
        () =>
          atGens(referenceGen(ref), expected) &&
          (informer === undefined || atGens(informerGen(informer), expected)),
        `change ${pods.changes} (static-${i}) to reach the watchers`,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; ${await whoIsBehind(expected, ref, informer)}`);
    }
  }
}

/** For each static pod not at its expected gen: the gen of the daemon's list and of each watcher. */
async function whoIsBehind(
  expected: Map<string, string>,
  ref: ReferenceWatch,
  informer?: PodInformer,
): Promise<string> {
  let daemon: (uid: string) => string | undefined;
  try {
    const listed = byUid(await ref.client.listPods());
    daemon = (uid) => genOf(listed.get(uid));
  } catch (error) {
    daemon = () => `(ListPods failed: ${(error as Error).message})`;
  }
  const ended = ref.ended === undefined
    ? "live"
    : `ended${ref.ended.error === undefined ? "" : ` (${(ref.ended.error as Error).message})`}`;
  const lines = [...expected].filter(([uid, gen]) =>
    referenceGen(ref)(uid) !== gen ||
    (informer !== undefined && informerGen(informer)(uid) !== gen)
  ).map(([uid, gen]) =>
    `${uid}: expected gen ${gen}, daemon's list ${daemon(uid)}, reference watch (${ended}) ${
      referenceGen(ref)(uid)
    }, informer ${informer === undefined ? "away" : informerGen(informer)(uid)}`
  );
  return lines.join("; ");
}

/** Records what the handlers see, tagged with the test's phase. */
function record(informer: PodInformer, phase: () => number): Seen[] {
  const seen: Seen[] = [];
  informer.addEventHandler({
    onAdd: (pod) =>
      seen.push({ phase: phase(), type: "add", uid: pod.metadata.uid, json: JSON.stringify(pod) }),
    onUpdate: (old, pod) =>
      seen.push({
        phase: phase(),
        type: "update",
        uid: pod.metadata.uid,
        json: JSON.stringify(pod),
        oldJson: JSON.stringify(old),
      }),
    onDelete: (pod) =>
      seen.push({
        phase: phase(),
        type: "delete",
        uid: pod.metadata.uid,
        json: JSON.stringify(pod),
      }),
  });
  return seen;
}

/** The handlers' story, replayed, must be a consistent life per pod ending in `final`. */
function assertStory(seen: readonly Seen[], final: Map<string, string>): void {
  const replay = new Map<string, string>();
  for (const e of seen) {
    if (e.type === "add") {
      assert.equal(replay.has(e.uid), false, `add of a pod already there: ${e.uid}`);
      replay.set(e.uid, e.json);
    } else if (e.type === "update") {
      assert.equal(e.oldJson, replay.get(e.uid), `update's old version is the last seen: ${e.uid}`);
      assert.notEqual(e.json, e.oldJson);
      replay.set(e.uid, e.json);
    } else {
      assert.equal(replay.has(e.uid), true, `delete of an unknown pod: ${e.uid}`);
      replay.delete(e.uid);
    }
  }
  assert.deepEqual(replay, final);
}

/** Versions per UID the handlers saw in one phase (deletions left out: they repeat the last state). */
function versionsOf(seen: readonly Seen[], phase: number): Map<string, string[]> {
  const perUid = new Map<string, string[]>();
  for (const e of seen) {
    if (e.phase !== phase || e.type === "delete") continue;
    perUid.set(e.uid, [...(perUid.get(e.uid) ?? []), e.json]);
  }
  return perUid;
}

/**
 * Each pod's versions are the direct watch's from the first one seen on:
 * in order, none skipped, none made up.
 */
function assertSameVersions(
  seen: Map<string, string[]>,
  reference: Map<string, string[]>,
  what: string,
): void {
  for (const [uid, versions] of seen) {
    const ref = reference.get(uid) ?? [];
    const at = ref.indexOf(versions[0]!);
    assert.notEqual(at, -1, `${what}: pod ${uid}'s first version was never sent by the daemon`);
    assert.deepEqual(versions, ref.slice(at), `${what}: pod ${uid}: a version skipped or made up`);
  }
}

/**
 * Every static pod went through every gen made since `from`, one by one:
 * the handlers saw each change the test made.
 *
 * @returns How many changes that is.
 */
function assertEveryChange(
  seen: Map<string, string[]>,
  from: Map<string, string>,
  to: Map<string, string>,
  what: string,
): number {
  let changes = 0;
  for (const [uid, last] of to) {
    const gens = (seen.get(uid) ?? []).map(genOf).filter((g, i, all) => g !== all[i - 1]);
    const first = Number(from.get(uid));
    const made = Array.from({ length: Number(last) - first }, (_, k) => String(first + 1 + k));
    if (gens[0] === String(first)) gens.shift();
    assert.deepEqual(gens, made, `${what}: ${uid}'s changes`);
    changes += made.length;
  }
  return changes;
}

Deno.test("PodInformer resumes from its token across cut connections and relists after a SIGKILL restart: store equals the daemon's list, handlers saw every change of every pod in order", async () => {
  await using statics = await StaticPods.create(6);
  await using daemon = await startSimDaemon({ pods: 30, seed: 11, flags: statics.flags });
  await using proxy = startSocketProxy(`${daemon.dir}/proxy.sock`, daemon.socket);
  using direct = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: proxy.path });
  let phase = 1;
  const retries: InformerRetry[] = [];
  const informer = new PodInformer(client, {
    backoff: { initialMs: 10, maxMs: 100 },
    onRetry: (r) => retries.push(r),
  });
  const seen = record(informer, () => phase);

  // Phase 1: a reference watch straight on the daemon, then the informer through the proxy.
  const atStart = statics.expected();
  const stopRef1 = new AbortController();
  const ref1 = recordVersions(direct, stopRef1.signal);
  await ref1.synced;
  const stop = new AbortController();
  const running = informer.run(stop.signal);
  await informer.waitForSync(AbortSignal.timeout(30_000));
  assert.equal(informer.hasSynced(), true);
  assert.equal(informer.api, "PodQuery");
  await change(statics, [0, 1, 2, 3], ref1, informer);
  // Connections cut mid-watch, three times; while the informer is away, pods
  // change (one of them twice): the resume must replay every change.
  for (let i = 0; i < 3; i++) {
    const resumes = informer.stats.resumes;
    proxy.pause();
    proxy.cut();
    await change(statics, [i, 4, i], ref1);
    proxy.resume();
    await waitUntil(() => informer.stats.resumes > resumes, `the resume after cut ${i + 1}`);
    await change(statics, [5, i + 1], ref1, informer);
  }
  const atPhase2 = statics.expected();
  assert.equal(informer.stats.relists, 0, "a cut connection resumes, never relists");

  // Phase 2: killed mid-watch, back (same seed and manifests: the same UIDs): its token is from
  // the earlier run, so the informer relists, then follows every change again.
  proxy.pause();
  await daemon.kill("SIGKILL");
  await ref1.done;
  phase = 2;
  await daemon.restart();
  const stopRef2 = new AbortController();
  const ref2 = recordVersions(direct, stopRef2.signal);
  await ref2.synced;
  proxy.resume();
  await waitUntil(() => informer.stats.relists === 1, "the relist after the restart");
  await change(statics, [5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 4, 5], ref2, informer);
  const atPhase3 = statics.expected();

  // Phase 3: killed again, back with another node, so the end state can be compared.
  proxy.pause();
  await daemon.kill("SIGKILL");
  stopRef2.abort();
  await ref2.done;
  phase = 3;
  await daemon.restart({ seed: 13 });
  proxy.resume();
  const final = byUid(await direct.listPods());
  await waitUntil(() => {
    const store = byUid(informer.list());
    return store.size === final.size && [...final].every(([uid, json]) => store.get(uid) === json);
  }, "the informer's store to equal the daemon's list");
  stop.abort();
  await running;

  assert.deepEqual(byUid(informer.list()), final);
  assertStory(seen, final);
  // Phase 1 spans three cut connections, phase 2 starts from a relist: not one change missed.
  assertSameVersions(versionsOf(seen, 1), ref1.versions, "phase 1");
  assert.equal(assertEveryChange(versionsOf(seen, 1), atStart, atPhase2, "phase 1"), 19);
  assertSameVersions(versionsOf(seen, 2), ref2.versions, "phase 2");
  assert.equal(assertEveryChange(versionsOf(seen, 2), atPhase2, atPhase3, "phase 2"), 12);
  assert.equal(informer.stats.relists, 2);
  assert.ok(informer.stats.resumes >= 3);
  assert.ok(retries.length >= 2, `retries: ${retries.length}`);
  assert.ok(seen.some((e) => e.type === "delete"), "a deletion reached the handlers");
});

Deno.test("PodInformer on a socket without PodQuery (a kubelet's) watches v1alpha1.Pods and relists after each cut: store equals the daemon's list, every change in order", async () => {
  await using statics = await StaticPods.create(6);
  await using daemon = await startSimDaemon({ pods: 30, seed: 21, flags: statics.flags });
  await using kubelet = startKubeletLikeServer(`${daemon.dir}/kubelet.sock`, daemon.socket);
  await using proxy = startSocketProxy(`${daemon.dir}/proxy.sock`, kubelet.path);
  using direct = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: proxy.path });
  const informer = new PodInformer(client, { backoff: { initialMs: 10, maxMs: 100 } });
  let phase = 1;
  const seen = record(informer, () => phase);
  const stopRef = new AbortController();
  const ref = recordVersions(direct, stopRef.signal);
  await ref.synced;
  const stop = new AbortController();
  const running = informer.run(stop.signal);
  await informer.waitForSync(AbortSignal.timeout(30_000));
  assert.equal(informer.api, "v1alpha1.Pods");
  const atStart = statics.expected();
  await change(statics, [0, 1, 2], ref, informer);
  // While the informer is away, some pods change once each: the relist
  // after the cut brings each of those changes.
  for (let i = 0; i < 3; i++) {
    const relists = informer.stats.relists;
    proxy.pause();
    proxy.cut();
    await change(statics, [i, i + 3], ref);
    proxy.resume();
    await waitUntil(() => informer.stats.relists > relists, `the relist after cut ${i + 1}`);
    await change(statics, [5 - i, i], ref, informer);
  }
  const atEnd = statics.expected();
  proxy.pause();
  stopRef.abort();
  await ref.done;
  const relists = informer.stats.relists;
  phase = 2;
  await daemon.restart({ seed: 22 });
  proxy.cut();
  proxy.resume();
  const final = byUid(await direct.listPods());
  await waitUntil(() => {
    const store = byUid(informer.list());
    return store.size === final.size && [...final].every(([uid, json]) => store.get(uid) === json);
  }, "the informer's store to equal the daemon's list");
  stop.abort();
  await running;
  assert.ok(informer.stats.relists > relists);
  assertStory(seen, final);
  assertSameVersions(versionsOf(seen, 1), ref.versions, "v1alpha1.Pods");
  assert.equal(assertEveryChange(versionsOf(seen, 1), atStart, atEnd, "v1alpha1.Pods"), 15);
});

Deno.test("PodInformer takes RESOURCE_EXHAUSTED (no watcher slot) as back-off and syncs once a slot frees", async () => {
  await using daemon = await startSimDaemon({ pods: 5, flags: ["--max-watchers", "1"] });
  using holder = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: daemon.socket });
  const hold = new AbortController();
  const holding = Promise.withResolvers<void>();
  const held = (async () => {
    for await (const _ of new PodQueryClient(holder).watch({ signal: hold.signal })) {
      // Keep the only slot.
      holding.resolve();
    }
  })();
  // The holder has its first event: the slot is taken.
  await holding.promise;
  const retries: InformerRetry[] = [];
  const informer = new PodInformer(client, {
    backoff: { initialMs: 10, maxMs: 50 },
    onRetry: (r) => {
      retries.push(r);
      if (retries.length === 3) hold.abort();
    },
  });
  const stop = new AbortController();
  const running = informer.run(AbortSignal.any([stop.signal, AbortSignal.timeout(30_000)]));
  await informer.waitForSync(AbortSignal.timeout(30_000));
  stop.abort();
  await running;
  await held;
  assert.ok(retries.length >= 3);
  for (const r of retries.slice(0, 3)) {
    assert.ok(r.error instanceof GrpcError);
    assert.equal((r.error as GrpcError).code, STATUS.RESOURCE_EXHAUSTED);
  }
  assert.deepEqual(retries.slice(0, 3).map((r) => r.attempt), [1, 2, 3]);
  assert.equal(informer.list().length, 5);
});

Deno.test("PodInformer.run() throws for a mask or selector the daemon refuses, instead of retrying forever", async () => {
  await using daemon = await startSimDaemon({ pods: 2 });
  using client = new PodsClient({ socket: daemon.socket });
  for (const api of ["auto", "v1alpha1.Pods"] as const) {
    const informer = new PodInformer(client, { api, fields: ["spec.nosuchfield"] });
    await assert.rejects(informer.run(AbortSignal.timeout(30_000)), (err: unknown) => {
      assert.ok(err instanceof GrpcError);
      assert.equal(err.code, STATUS.INVALID_ARGUMENT);
      return true;
    });
    assert.equal(informer.hasSynced(), false);
  }
  assert.throws(
    () => new PodInformer(client, { selector: { labelSelector: "a in (b" } }),
    SyntaxError,
  );
});

Deno.test("PodInformer selects pods on the daemon or itself, with the same meaning", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  await using kubelet = startKubeletLikeServer(`${daemon.dir}/kubelet.sock`, daemon.socket);
  const names = [];
  for (const socket of [daemon.socket, kubelet.path]) {
    using client = new PodsClient({ socket });
    const informer = new PodInformer(client, {
      selector: { namespace: "payments", labelSelector: "app.kubernetes.io/name=ledger-worker" },
    });
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync(AbortSignal.timeout(30_000));
    stop.abort();
    await running;
    names.push([informer.api, informer.list().map((p) => p.metadata.name)]);
  }
  assert.deepEqual(names, [
    ["PodQuery", ["ledger-worker-r949nspsh-cr9th", "ledger-worker-r949nspsh-gc6w5"]],
    ["v1alpha1.Pods", ["ledger-worker-r949nspsh-cr9th", "ledger-worker-r949nspsh-gc6w5"]],
  ]);
});
