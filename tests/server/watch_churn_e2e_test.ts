// SPEC §6.4 over a real socket: watchers on both services, with and without
// a mask, follow a simulated node through a long churn run; each stream is
// replayed per UID and must keep every invariant, and an unmasked watcher's
// replayed state must equal ListPods at the end.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import type { PodObject } from "../../src/model/pod.ts";
import { decodePod } from "../../src/proto/mod.ts";
import { SimulatedNode, SimulatedPodSource } from "../../src/sim/mod.ts";
import { FakeClock } from "../../src/clock.ts";
import {
  callUnary,
  maskMetadata,
  startHarness,
  watch,
  type WatchRecorder,
} from "../_support/daemon_harness.ts";
import { pollUntil } from "../_support/poll.ts";

const TERMINAL = new Set(["Succeeded", "Failed"]);

interface Seen {
  added: number;
  deleted: boolean;
  deletionTimestamp: boolean;
  phase: string | undefined;
  pod: PodObject;
}

/** Replays a stream of (type, pod) and returns the final state, asserting invariants. */
function replay(events: ReadonlyArray<{ type: string; pod?: PodObject }>, where: string) {
  const state = new Map<string, Seen>();
  let synced = false;
  for (const { type, pod } of events) {
    if (type === "INITIAL_SYNC_COMPLETE") {
      assert.equal(synced, false, `${where}: one INITIAL_SYNC_COMPLETE`);
      synced = true;
      continue;
    }
    assert.ok(pod, `${where}: ${type} carries a pod`);
    const uid = pod.metadata.uid;
    const seen = state.get(uid);
    const phase = (pod.status?.phase as string | undefined) ?? undefined;
    if (type === "ADDED") {
      assert.ok(seen === undefined || seen.deleted, `${where}: ${uid} ADDED twice`);
    } else {
      assert.ok(
        seen !== undefined && !seen.deleted,
        `${where}: ${uid} ${type} before ADDED or after DELETED`,
      );
    }
    if (seen && !seen.deleted) {
      if (seen.deletionTimestamp) {
        assert.ok(pod.metadata.deletionTimestamp, `${where}: ${uid} lost deletionTimestamp`);
      }
      if (seen.phase === "Running") {
        assert.notEqual(phase, "Pending", `${where}: ${uid} Running -> Pending`);
      }
      if (seen.phase && TERMINAL.has(seen.phase)) {
        assert.equal(phase, seen.phase, `${where}: ${uid} left ${seen.phase}`);
      }
    }
    if (type === "DELETED") {
      assert.ok(pod.metadata.deletionTimestamp, `${where}: DELETED without deletionTimestamp`);
    }
    state.set(uid, {
      added: (seen?.added ?? 0) + (type === "ADDED" ? 1 : 0),
      deleted: type === "DELETED",
      deletionTimestamp: Boolean(pod.metadata.deletionTimestamp),
      phase,
      pod,
    });
  }
  return state;
}

function alphaEvents(w: WatchRecorder) {
  return w.messages.map((m) => {
    const { type, pod } = m as { type: string; pod?: Buffer };
    return pod && pod.length > 0 ? { type, pod: decodePod(pod) } : { type };
  });
}

function legacyEvents(w: WatchRecorder) {
  // The package-less service has no event types: infer them as a client must.
  const live = new Set<string>();
  return w.messages.map((m) => {
    const pod = (m as { pod: PodObject }).pod;
    const uid = pod.metadata.uid;
    let type = live.has(uid) ? "MODIFIED" : "ADDED";
    if (pod.metadata.deletionTimestamp && live.has(uid)) type = "DELETED";
    if (type === "DELETED") live.delete(uid);
    else live.add(uid);
    return { type, pod: { ...pod, status: pod.status ?? {} } as PodObject };
  });
}

Deno.test("watchers keep every SPEC §6 invariant through a long churn run", async () => {
  const clock = new FakeClock();
  const node = new SimulatedNode({
    clock,
    pods: 40,
    churnPerSecond: 8,
    seed: 99,
    nodeName: "test-node",
  });
  const source = new SimulatedPodSource({ node, clock });
  await using h = await startHarness({
    sources: [source],
    clock,
    flags: ["--rate-limit-burst", "1000"],
  });
  await h.daemon.relistOnce();
  const plain = watch(h.v1alpha1);
  const masked = watch(h.v1alpha1, maskMetadata("status.phase,metadata.labels"));
  const legacy = watch(h.v1);
  await plain.waitFor(h.daemon.cache.list().length + 1);
  for (let step = 0; step < 300; step++) {
    clock.advance(1000);
    await h.daemon.relistOnce();
    // Every 10 s of the daemon's clock each client calls, as a client's
    // connection would carry something over real minutes: the transport's
    // keepalive (on that clock too) sees the peers alive, and the streams
    // drain meanwhile.
    if (step % 10 === 9) {
      for (const stub of [h.v1alpha1, h.v1]) {
        assert.ok((await callUnary(stub, "ListPods", {})).ok, `ListPods at step ${step}`);
      }
    }
  }
  const list = await callUnary<{ pods: Buffer[] }>(h.v1alpha1, "ListPods", {});
  assert.ok(list.ok);
  const listed = new Map(list.value.pods.map((b) => {
    const pod = decodePod(b);
    return [pod.metadata.uid, pod] as const;
  }));
  const events = Number(
    /pods_api_pod_events_total\{type="MODIFIED"\} (\d+)/.exec((await h.http("/metrics")).body)?.[1],
  );
  assert.ok(node.mutations > 2000 && events > 1000, `churn happened (${node.mutations} changes)`);
  // Wait until the unmasked watcher has caught up with the cache.
  await pollUntil(
    () => {
      const state = replay(alphaEvents(plain), "v1alpha1");
      const live = [...state].filter(([, s]) => !s.deleted);
      return live.length === listed.size &&
        live.every(([uid, s]) =>
          listed.has(uid) && JSON.stringify(s.pod) === JSON.stringify(listed.get(uid))
        );
    },
    "the unmasked watcher converges on ListPods",
    20_000,
  );
  replay(alphaEvents(masked), "masked");
  for (const { type, pod } of alphaEvents(masked)) {
    if (type === "INITIAL_SYNC_COMPLETE") continue;
    assert.deepEqual(
      Object.keys(pod!).sort(),
      ["metadata", "status"].filter((k) => k in pod!).sort(),
    );
  }
  replay(legacyEvents(legacy), "v1");
  for (const w of [plain, masked, legacy]) {
    w.cancel();
    assert.equal((await w.ended).code, grpc.status.CANCELLED);
  }
});
