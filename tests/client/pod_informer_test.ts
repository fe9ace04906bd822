// PodInformer against the real daemon in its own process: SIGKILL restarts and cut connections
// while the simulated node churns.
import assert from "node:assert/strict";
import {
  GrpcError,
  type InformerRetry,
  PodInformer,
  type PodObject,
  PodsClient,
  STATUS,
} from "../../src/client/mod.ts";
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

Deno.test("PodInformer survives SIGKILL restarts and cut connections mid-watch: its store ends equal to the daemon's list and its handlers saw each pod's versions in order", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 40, seed: 11 });
  await using proxy = startSocketProxy(`${daemon.dir}/proxy.sock`, daemon.socket);
  using direct = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: proxy.path });
  let phase = 1;
  const seen: Seen[] = [];
  const retries: InformerRetry[] = [];
  const informer = new PodInformer(client, {
    backoff: { initialMs: 10, maxMs: 100 },
    onRetry: (r) => retries.push(r),
  });
  informer.addEventHandler({
    onAdd: (pod) =>
      seen.push({ phase, type: "add", uid: pod.metadata.uid, json: JSON.stringify(pod) }),
    onUpdate: (old, pod) =>
      seen.push({
        phase,
        type: "update",
        uid: pod.metadata.uid,
        json: JSON.stringify(pod),
        oldJson: JSON.stringify(old),
      }),
    onDelete: (pod) =>
      seen.push({ phase, type: "delete", uid: pod.metadata.uid, json: JSON.stringify(pod) }),
  });

  // Phase 1: a reference watch straight on the daemon, then the informer through the proxy.
  const stopRef1 = new AbortController();
  const ref1 = recordVersions(direct, stopRef1.signal);
  await sleep(100);
  const stop = new AbortController();
  const running = informer.run(stop.signal);
  await informer.waitForSync();
  assert.equal(informer.hasSynced(), true);
  // Long enough for relists (every 1 s) to bring the churn in.
  await sleep(1500);

  // Phase 2: the daemon is killed mid-watch and comes back (same seed: the same UIDs, other states).
  proxy.pause();
  await daemon.kill("SIGKILL");
  await ref1.done;
  phase = 2;
  await daemon.restart();
  const stopRef2 = new AbortController();
  const ref2 = recordVersions(direct, stopRef2.signal);
  await sleep(100);
  proxy.resume();
  const relistsBefore = informer.stats.relists;
  await waitUntil(() => informer.stats.relists > relistsBefore, "the relist after the restart");
  // Connections cut mid-watch, three times, while the node keeps changing.
  for (let i = 0; i < 3; i++) {
    await sleep(300);
    const relists = informer.stats.relists;
    proxy.cut();
    await waitUntil(() => informer.stats.relists > relists, `the relist after cut ${i + 1}`);
  }
  await sleep(300);

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

  // The store is the daemon's list, and the handlers' story adds up to the store.
  assert.deepEqual(byUid(informer.list()), final);
  const replay = new Map<string, string>();
  for (const e of seen) {
    if (e.type === "add") {
      assert.equal(replay.has(e.uid), false, `add of a pod already there: ${e.uid}`);
      replay.set(e.uid, e.json);
    } else if (e.type === "update") {
      assert.equal(
        e.oldJson,
        replay.get(e.uid),
        `update's old version is the last one seen: ${e.uid}`,
      );
      assert.notEqual(e.json, e.oldJson);
      replay.set(e.uid, e.json);
    } else {
      assert.equal(replay.has(e.uid), true, `delete of an unknown pod: ${e.uid}`);
      replay.delete(e.uid);
    }
  }
  assert.deepEqual(replay, final);

  // Each pod's versions came in the daemon's order: per incarnation, the versions the handlers
  // saw are a subsequence of what a direct watch saw (a relist after a gap skips, never reorders).
  for (const [phaseNo, ref] of [[1, ref1], [2, ref2]] as const) {
    const perUid = new Map<string, string[]>();
    for (const e of seen) {
      if (e.phase !== phaseNo || e.type === "delete") continue;
      perUid.set(e.uid, [...(perUid.get(e.uid) ?? []), e.json]);
    }
    let checked = 0;
    for (const [uid, versions] of perUid) {
      const reference = ref.versions.get(uid) ?? [];
      let at = 0;
      for (const v of versions) {
        at = reference.indexOf(v, at);
        assert.notEqual(
          at,
          -1,
          `phase ${phaseNo}: pod ${uid} version not seen by the direct watch, or out of order`,
        );
        at++;
        checked++;
      }
    }
    assert.ok(checked > 30, `phase ${phaseNo}: only ${checked} versions checked`);
  }
  assert.ok(seen.some((e) => e.phase === 1 && e.type === "update"), "churn reached the handlers");
  assert.ok(seen.some((e) => e.type === "delete"), "a deletion reached the handlers");
  assert.ok(informer.stats.relists >= 5, `relists: ${informer.stats.relists}`);
  assert.ok(retries.length >= 2, `retries: ${retries.length}`);
});

Deno.test("PodInformer takes RESOURCE_EXHAUSTED (no watcher slot) as back-off and syncs once a slot frees", async () => {
  await using daemon = await startSimDaemon({ pods: 5, flags: ["--max-watchers", "1"] });
  using holder = new PodsClient({ socket: daemon.socket });
  using client = new PodsClient({ socket: daemon.socket });
  const hold = new AbortController();
  const held = (async () => {
    for await (const _ of holder.watchPods({ signal: hold.signal })) {
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
  const running = informer.run(stop.signal);
  await informer.waitForSync();
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

Deno.test("PodInformer.run() throws for a mask the daemon refuses, instead of retrying forever", async () => {
  await using daemon = await startSimDaemon({ pods: 2 });
  using client = new PodsClient({ socket: daemon.socket });
  const informer = new PodInformer(client, { fields: ["spec.nosuchfield"] });
  await assert.rejects(informer.run(new AbortController().signal), (err: unknown) => {
    assert.ok(err instanceof GrpcError);
    assert.equal(err.code, STATUS.INVALID_ARGUMENT);
    return true;
  });
  assert.equal(informer.hasSynced(), false);
});
