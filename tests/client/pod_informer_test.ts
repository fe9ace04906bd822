// PodInformer against the real daemon in its own process: SIGKILL restarts and cut connections
// while the simulated node churns; on PodQuery (resume) and on a kubelet's v1alpha1.Pods (relist).
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
import { startSocketProxy } from "../_support/socket_proxy.ts";
import { startSimDaemon } from "./_sim_daemon.ts";

interface Seen {
  readonly phase: number;
  readonly type: "add" | "update" | "delete";
  readonly uid: string;
  readonly json: string;
  readonly oldJson?: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Every version of every pod one direct watch saw, per UID, in order. */
function recordVersions(client: PodsClient, signal: AbortSignal): {
  versions: Map<string, string[]>;
  done: Promise<void>;
} {
  const versions = new Map<string, string[]>();
  const done = (async () => {
    try {
      for await (const event of client.watchPods({ signal })) {
        if (event.pod === undefined) continue;
        const list = versions.get(event.pod.metadata.uid) ?? [];
        list.push(JSON.stringify(event.pod));
        versions.set(event.pod.metadata.uid, list);
      }
    } catch {
      // The daemon was killed: what was seen stays.
    }
  })();
  return { versions, done };
}

function byUid(pods: readonly PodObject[]): Map<string, string> {
  return new Map(pods.map((p) => [p.metadata.uid, JSON.stringify(p)]));
}

async function waitUntil(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  // A bound on a hang, not a timing assertion.
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(25);
  }
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
 * Each pod's versions are the direct watch's, in order; with `contiguous`, none skipped
 * from the first one seen on (a resume loses nothing), else only skips (a relist after a gap).
 *
 * @returns How many versions were checked.
 */
function assertInOrder(
  seen: Map<string, string[]>,
  reference: Map<string, string[]>,
  contiguous: boolean,
  what: string,
): number {
  let checked = 0;
  for (const [uid, versions] of seen) {
    const ref = reference.get(uid) ?? [];
    let at = ref.indexOf(versions[0]!);
    assert.notEqual(at, -1, `${what}: pod ${uid}'s first version was never sent by the daemon`);
    for (const v of versions.slice(1)) {
      const next = ref.indexOf(v, at + 1);
      if (next === -1 && at === ref.length - 1) break; // the direct watch was cut first
      assert.notEqual(next, -1, `${what}: pod ${uid}: a version out of order or made up`);
      if (contiguous) assert.equal(next, at + 1, `${what}: pod ${uid}: a change was skipped`);
      at = next;
      checked++;
    }
  }
  return checked;
}

Deno.test("PodInformer resumes from its token across cut connections and relists after a SIGKILL restart: store equals the daemon's list, handlers saw every change of every pod in order", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 40, seed: 11 });
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
  const stopRef1 = new AbortController();
  const ref1 = recordVersions(direct, stopRef1.signal);
  await sleep(100);
  const stop = new AbortController();
  const running = informer.run(stop.signal);
  await informer.waitForSync(AbortSignal.timeout(30_000));
  assert.equal(informer.hasSynced(), true);
  assert.equal(informer.api, "PodQuery");
  // Connections cut mid-watch, three times, while the node keeps changing (relists every 1 s).
  for (let i = 0; i < 3; i++) {
    await sleep(600);
    const resumes = informer.stats.resumes;
    proxy.cut();
    await waitUntil(() => informer.stats.resumes > resumes, `the resume after cut ${i + 1}`);
  }
  await sleep(600);
  assert.equal(informer.stats.relists, 0, "a cut connection resumes, never relists");

  // Phase 2: killed mid-watch, back (same seed: the same UIDs, other states): its token is
  // from the earlier run, so the informer relists.
  proxy.pause();
  await daemon.kill("SIGKILL");
  await ref1.done;
  phase = 2;
  await daemon.restart();
  const stopRef2 = new AbortController();
  const ref2 = recordVersions(direct, stopRef2.signal);
  await sleep(100);
  proxy.resume();
  await waitUntil(() => informer.stats.relists === 1, "the relist after the restart");
  await sleep(2500);

  // Phase 3: killed again, back with a quiet node, so the end state can be compared.
  proxy.pause();
  await daemon.kill("SIGKILL");
  stopRef2.abort();
  await ref2.done;
  phase = 3;
  await daemon.restart({ churn: 0, seed: 13 });
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
  // Phase 1 spans three cut connections: not one change missed.
  assert.ok(assertInOrder(versionsOf(seen, 1), ref1.versions, true, "phase 1") > 30);
  // Phase 2 starts from a relist after the restart and reads through the
  // proxy, behind the direct reference watch: on a loaded machine its queue
  // may merge a pod's pending changes into the newest (SPEC §6.5), so here
  // the changes must come in order and none be made up, not every one of them.
  assert.ok(assertInOrder(versionsOf(seen, 2), ref2.versions, false, "phase 2") > 5);
  assert.equal(informer.stats.relists, 2);
  assert.ok(informer.stats.resumes >= 3);
  assert.ok(retries.length >= 2, `retries: ${retries.length}`);
  assert.ok(seen.some((e) => e.type === "delete"), "a deletion reached the handlers");
});

Deno.test("PodInformer on a socket without PodQuery (a kubelet's) watches v1alpha1.Pods and relists after each cut: store equals the daemon's list, versions in order", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 40, seed: 21 });
  await using kubelet = startKubeletLikeServer(`${daemon.dir}/kubelet.sock`, daemon.socket);
  await using proxy = startSocketProxy(`${daemon.dir}/proxy.sock`, kubelet.path);
  using direct = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: proxy.path });
  const informer = new PodInformer(client, { backoff: { initialMs: 10, maxMs: 100 } });
  let phase = 1;
  const seen = record(informer, () => phase);
  const stopRef = new AbortController();
  const ref = recordVersions(direct, stopRef.signal);
  await sleep(100);
  const stop = new AbortController();
  const running = informer.run(stop.signal);
  await informer.waitForSync(AbortSignal.timeout(30_000));
  assert.equal(informer.api, "v1alpha1.Pods");
  for (let i = 0; i < 3; i++) {
    await sleep(600);
    const relists = informer.stats.relists;
    proxy.cut();
    await waitUntil(() => informer.stats.relists > relists, `the relist after cut ${i + 1}`);
  }
  await sleep(600);
  proxy.pause();
  stopRef.abort();
  await ref.done;
  const relists = informer.stats.relists;
  phase = 2;
  await daemon.restart({ churn: 0, seed: 22 });
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
  // Before the restart: a relist skips the changes of the gap, never reorders or makes one up.
  assert.ok(assertInOrder(versionsOf(seen, 1), ref.versions, false, "v1alpha1.Pods") > 30);
});

Deno.test("PodInformer takes RESOURCE_EXHAUSTED (no watcher slot) as back-off and syncs once a slot frees", async () => {
  await using daemon = await startSimDaemon({ pods: 5, flags: ["--max-watchers", "1"] });
  using holder = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: daemon.socket });
  const hold = new AbortController();
  const held = (async () => {
    for await (const _ of new PodQueryClient(holder).watch({ signal: hold.signal })) {
      // Keep the only slot.
    }
  })();
  await sleep(200);
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
