// DESIGN.md §6.4 over a real socket: watchers on both services, with and without
// a mask, follow a simulated node through a long churn run. Each stream is
// checked as it was served (the v1alpha1 event types as sent; the v1 stream's
// pods as sent, it has no types), and each one's final state must equal a
// ListPods of the same service with the same mask.
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
  type PodsStub,
  startHarness,
  watch,
  type WatchRecorder,
} from "../_support/daemon_harness.ts";
import { compareWithList, WatchSequenceChecker } from "../_support/watch_sequence.ts";

const TERMINAL = new Set(["Succeeded", "Failed"]);
const MASK = "status.phase,metadata.labels";

/** The content rules of §6.4 on one pod's successive states as served. */
function checkHistory(uid: string, pods: readonly PodObject[], where: string): void {
  for (let i = 1; i < pods.length; i++) {
    const before = pods[i - 1]!;
    const after = pods[i]!;
    const was = before.status?.phase as string | undefined;
    const now = after.status?.phase as string | undefined;
    assert.ok(now, `${where}: ${uid} has an empty phase`);
    if (before.metadata.deletionTimestamp) {
      assert.ok(after.metadata.deletionTimestamp, `${where}: ${uid} lost deletionTimestamp`);
    }
    if (was === "Running") assert.notEqual(now, "Pending", `${where}: ${uid} Running -> Pending`);
    if (was && TERMINAL.has(was)) assert.equal(now, was, `${where}: ${uid} left ${was}`);
  }
}

/**
 * Checks a v1alpha1 stream as served: the event rules through
 * {@linkcode WatchSequenceChecker} (the simulator never reuses a UID: each
 * pod is created and removed at most once), the content rules per pod.
 */
function checkAlpha(w: WatchRecorder, where: string): WatchSequenceChecker {
  const checker = new WatchSequenceChecker({ created: () => 1, removed: () => 1 });
  const history = new Map<string, PodObject[]>();
  for (const m of w.messages) {
    const { type, pod } = m as { type: string; pod?: Buffer };
    checker.observe(type, pod);
    if (pod === undefined || pod.length === 0) continue;
    const decoded = decodePod(pod);
    const list = history.get(decoded.metadata.uid) ?? [];
    list.push(decoded);
    history.set(decoded.metadata.uid, list);
  }
  assert.deepEqual(checker.violations.slice(0, 10), [], `${where}: event rules`);
  assert.equal(checker.counts.INITIAL_SYNC_COMPLETE, 1, `${where}: one INITIAL_SYNC_COMPLETE`);
  for (const [uid, pods] of history) checkHistory(uid, pods, where);
  return checker;
}

/**
 * Checks the package-less stream as served (it has no event types): the
 * initial pods are `initial` in UID order; per UID, nothing follows a pod
 * sent with `deletionTimestamp` (the simulator sets one only on deletion);
 * the content rules per pod.
 *
 * @returns The live pods: the last one sent of each UID not deleted.
 */
function checkV1(w: WatchRecorder, initial: readonly PodObject[]): Map<string, PodObject> {
  const pods = w.messages.map((m) => (m as { pod: PodObject }).pod);
  assert.deepEqual(pods.slice(0, initial.length), initial, "v1: the pods first, as listed");
  const history = new Map<string, PodObject[]>();
  for (const pod of pods) {
    const uid = pod.metadata.uid;
    const list = history.get(uid) ?? [];
    assert.ok(!list.at(-1)?.metadata.deletionTimestamp, `v1: ${uid} sent after its deletion`);
    list.push(pod);
    history.set(uid, list);
  }
  const live = new Map<string, PodObject>();
  for (const [uid, list] of history) {
    checkHistory(uid, list, "v1");
    const last = list.at(-1)!;
    if (!last.metadata.deletionTimestamp) live.set(uid, last);
  }
  return live;
}

async function listAlpha(stub: PodsStub, mask?: string): Promise<Buffer[]> {
  const list = await callUnary<{ pods: Buffer[] }>(
    stub,
    "ListPods",
    {},
    mask === undefined ? undefined : maskMetadata(mask),
  );
  assert.ok(list.ok, "v1alpha1 ListPods answers");
  return list.value.pods;
}

async function listV1(stub: PodsStub): Promise<PodObject[]> {
  const list = await callUnary<{ pods: PodObject[] }>(stub, "ListPods", {});
  assert.ok(list.ok, "v1 ListPods answers");
  return list.value.pods;
}

/** What differs between the v1 stream's live pods and a v1 ListPods (empty: they agree). */
function compareV1(live: ReadonlyMap<string, PodObject>, listed: readonly PodObject[]): string[] {
  const out: string[] = [];
  for (const pod of listed) {
    const seen = live.get(pod.metadata.uid);
    if (JSON.stringify(seen) !== JSON.stringify(pod)) out.push(`${pod.metadata.uid} differs`);
  }
  if (live.size !== listed.length) out.push(`${live.size} live, ${listed.length} listed`);
  return out;
}

Deno.test("watchers keep every DESIGN.md §6 invariant through a long churn run", async () => {
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
  const initialV1 = await listV1(h.v1);
  const plain = watch(h.v1alpha1);
  const masked = watch(h.v1alpha1, maskMetadata(MASK));
  const legacy = watch(h.v1);
  await plain.waitFor(h.daemon.cache.list().length + 1);
  await legacy.waitFor(initialV1.length);
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
  const events = Number(
    /pods_api_pod_events_total\{type="MODIFIED"\} (\d+)/.exec((await h.http("/metrics")).body)?.[1],
  );
  assert.ok(node.mutations > 2000 && events > 1000, `churn happened (${node.mutations} changes)`);

  // Nothing changes any more: wait until every stream has caught up with its list.
  const lists = {
    plain: await listAlpha(h.v1alpha1),
    masked: await listAlpha(h.v1alpha1, MASK),
    v1: await listV1(h.v1),
  };
  const differences = () => [
    ...compareWithList(checkAlpha(plain, "v1alpha1").live(), lists.plain),
    ...compareWithList(checkAlpha(masked, "masked").live(), lists.masked),
    ...compareV1(checkV1(legacy, initialV1), lists.v1),
  ];
  // A bound on a hang, not a measure of speed.
  const deadline = Date.now() + 20_000;
  while (differences().length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(differences().slice(0, 10), [], "each stream ends where its ListPods is");
  assert.ok(lists.plain.length > 0 && lists.v1.length === lists.plain.length);

  for (const { type, pod } of masked.messages as { type: string; pod?: Buffer }[]) {
    if (type === "INITIAL_SYNC_COMPLETE") continue;
    const keys = Object.keys(decodePod(pod!)).sort();
    assert.deepEqual(keys, ["metadata", "status"].filter((k) => keys.includes(k)));
  }
  for (const w of [plain, masked, legacy]) {
    w.cancel();
    assert.equal((await w.ended).code, grpc.status.CANCELLED);
  }
});
