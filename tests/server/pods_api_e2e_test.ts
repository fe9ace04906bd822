// End to end over a real UNIX socket with grpc-js clients built from the
// published proto: status codes of DESIGN.md §9 on both services, field masks,
// rate limit, sync gate and watch delivery.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { makePod } from "../_fixtures/pods.ts";
import { decodePod } from "../../src/proto/mod.ts";
import { encodeFieldMaskBinary } from "../../src/proto/field_mask_bin.ts";
import {
  callUnary,
  type Harness,
  maskMetadata,
  type PodsStub,
  startHarness,
  watch,
} from "../_support/daemon_harness.ts";

const UID_A = "0a0a0a0a-0000-4000-8000-000000000001";
const UID_B = "0b0b0b0b-0000-4000-8000-000000000002";

async function synced(
  h: Harness,
  pods = [makePod({ uid: UID_A, name: "a" }), makePod({ uid: UID_B, name: "b" })],
) {
  h.source.set(pods);
  assert.equal(await h.daemon.relistOnce(), true);
}

type ListV1Alpha1 = { pods?: Buffer[] };
type GetV1Alpha1 = { pod?: Buffer };

const SERVICES: ReadonlyArray<{ name: string; stub: (h: Harness) => PodsStub }> = [
  { name: "v1alpha1.Pods", stub: (h) => h.v1alpha1 },
  { name: "Pods", stub: (h) => h.v1 },
];

Deno.test("every RPC answers FAILED_PRECONDITION until the sources synced, then serves", async () => {
  await using h = await startHarness();
  for (const { stub } of SERVICES) {
    const list = await callUnary(stub(h), "ListPods", {});
    assert.deepEqual(list, {
      ok: false,
      code: grpc.status.FAILED_PRECONDITION,
      details: "pod sources are still initializing",
    });
    const get = await callUnary(stub(h), "GetPod", { podUID: UID_A });
    assert.equal(get.ok ? -1 : get.code, grpc.status.FAILED_PRECONDITION);
    const w = watch(stub(h));
    assert.equal((await w.ended).code, grpc.status.FAILED_PRECONDITION);
  }
  assert.match((await h.http("/readyz")).body, /not ready/);
  assert.equal((await h.http("/readyz")).status, 503);
  await synced(h);
  assert.equal((await h.http("/readyz")).status, 200);
  const list = await callUnary<ListV1Alpha1>(h.v1alpha1, "ListPods", {});
  assert.ok(list.ok);
  assert.deepEqual(list.value.pods!.map((b) => decodePod(b).metadata.uid), [UID_A, UID_B]);
});

Deno.test("ListPods and GetPod answer the same pods on both services", async () => {
  await using h = await startHarness();
  await synced(h);
  const alpha = await callUnary<ListV1Alpha1>(h.v1alpha1, "ListPods", {});
  const packageless = await callUnary<
    { pods?: Array<{ metadata: { uid: string; name: string } }> }
  >(
    h.v1,
    "ListPods",
    {},
  );
  assert.ok(alpha.ok && packageless.ok);
  assert.deepEqual(
    packageless.value.pods!.map((p) => p.metadata.uid),
    alpha.value.pods!.map((b) => decodePod(b).metadata.uid),
  );
  const got = await callUnary<GetV1Alpha1>(h.v1alpha1, "GetPod", { podUID: UID_B });
  assert.ok(got.ok);
  assert.equal(decodePod(got.value.pod!).metadata.name, "b");
  const gotPackageless = await callUnary<{ pod?: { metadata: { name: string } } }>(h.v1, "GetPod", {
    podUID: UID_B,
  });
  assert.ok(gotPackageless.ok);
  assert.equal(gotPackageless.value.pod!.metadata.name, "b");
});

Deno.test("GetPod reports NOT_FOUND and INVALID_ARGUMENT with the value named", async (t) => {
  await using h = await startHarness();
  await synced(h);
  const cases = [
    {
      uid: "11111111-2222-4333-8444-555555555555",
      code: grpc.status.NOT_FOUND,
      match: /not found/,
    },
    { uid: "", code: grpc.status.INVALID_ARGUMENT, match: /empty/ },
    { uid: "../../etc/passwd", code: grpc.status.INVALID_ARGUMENT, match: /etc\/passwd/ },
    { uid: "x".repeat(500), code: grpc.status.INVALID_ARGUMENT, match: /malformed/ },
  ];
  for (const { stub, name } of SERVICES) {
    for (const c of cases) {
      await t.step(`${name} ${JSON.stringify(c.uid.slice(0, 20))}`, async () => {
        const res = await callUnary(stub(h), "GetPod", { podUID: c.uid });
        assert.equal(res.ok, false);
        if (res.ok) return;
        assert.equal(res.code, c.code);
        assert.match(res.details, c.match);
      });
    }
  }
});

Deno.test("field masks select fields, keep the identity fields and reject bad paths", async (t) => {
  await using h = await startHarness({ flags: ["--rate-limit-burst", "1000"] });
  await synced(h);
  await t.step("text mask", async () => {
    const res = await callUnary<ListV1Alpha1>(
      h.v1alpha1,
      "ListPods",
      {},
      maskMetadata("status.phase"),
    );
    assert.ok(res.ok);
    const pod = decodePod(res.value.pods![0]!);
    assert.deepEqual(Object.keys(pod).sort(), ["metadata", "status"]);
    assert.deepEqual(Object.keys(pod.metadata).sort(), ["name", "namespace", "uid"]);
    assert.deepEqual(Object.keys(pod.status!), ["phase"]);
  });
  await t.step("binary mask", async () => {
    const md = new grpc.Metadata();
    md.set(
      "x-kubernetes-fieldmask-bin",
      Buffer.from(encodeFieldMaskBinary(["spec.containers.name"])),
    );
    const res = await callUnary<GetV1Alpha1>(h.v1alpha1, "GetPod", { podUID: UID_A }, md);
    assert.ok(res.ok);
    const pod = decodePod(res.value.pod!);
    assert.deepEqual(Object.keys(pod).sort(), ["metadata", "spec"]);
    for (const c of pod.spec!.containers as Array<Record<string, unknown>>) {
      assert.deepEqual(Object.keys(c), ["name"]);
    }
  });
  const bad = [
    { name: "unknown field", md: maskMetadata("status.nope"), match: /status\.nope/ },
    { name: "through a scalar", md: maskMetadata("status.phase.x"), match: /status\.phase\.x/ },
    { name: "empty segment", md: maskMetadata("status..phase"), match: /status\.\.phase/ },
    {
      name: "both keys",
      md: (() => {
        const md = maskMetadata("status");
        md.set("x-kubernetes-fieldmask-bin", Buffer.from(encodeFieldMaskBinary(["spec"])));
        return md;
      })(),
      match: /more than one/,
    },
    {
      name: "repeated binary key",
      md: (() => {
        const md = new grpc.Metadata();
        md.add("x-kubernetes-fieldmask-bin", Buffer.from(encodeFieldMaskBinary(["status"])));
        md.add("x-kubernetes-fieldmask-bin", Buffer.from(encodeFieldMaskBinary(["spec"])));
        return md;
      })(),
      match: /more than one/,
    },
    {
      name: "garbage binary",
      md: (() => {
        const md = new grpc.Metadata();
        md.set("x-kubernetes-fieldmask-bin", Buffer.from([0x0a, 0xff, 0xff]));
        return md;
      })(),
      match: /fieldmask-bin/,
    },
  ];
  for (const c of bad) {
    await t.step(c.name, async () => {
      for (const { stub } of SERVICES) {
        const list = await callUnary(stub(h), "ListPods", {}, c.md);
        assert.equal(list.ok ? -1 : list.code, grpc.status.INVALID_ARGUMENT);
        if (!list.ok) assert.match(list.details, c.match);
        const w = watch(stub(h), c.md);
        const end = await w.ended;
        assert.equal(end.code, grpc.status.INVALID_ARGUMENT);
      }
    });
  }
});

Deno.test("ListPods and GetPod share a token bucket of burst 10, refilled at 100/s", async () => {
  await using h = await startHarness();
  await synced(h);
  const codes: number[] = [];
  for (let i = 0; i < 12; i++) {
    const res = i % 2 === 0
      ? await callUnary(h.v1alpha1, "ListPods", {})
      : await callUnary(h.v1, "GetPod", { podUID: UID_A });
    codes.push(res.ok ? 0 : res.code);
  }
  assert.deepEqual(codes, [
    ...Array(10).fill(0),
    grpc.status.RESOURCE_EXHAUSTED,
    grpc.status.RESOURCE_EXHAUSTED,
  ]);
  const rejected = await callUnary(h.v1alpha1, "ListPods", {});
  assert.deepEqual(rejected, {
    ok: false,
    code: grpc.status.RESOURCE_EXHAUSTED,
    details: "rejected by rate limit",
  });
  h.clock.advance(10);
  assert.equal((await callUnary(h.v1alpha1, "ListPods", {})).ok, true);
  assert.equal((await callUnary(h.v1alpha1, "ListPods", {})).ok, false);
  const w = watch(h.v1alpha1);
  await w.waitFor(3);
  w.cancel();
  await w.ended;
  const metrics = (await h.http("/metrics")).body;
  assert.match(
    metrics,
    /kubelet_pod_requests_list_total\{server_api_version="v1alpha1",status_code="ResourceExhausted"\} 3/,
  );
  assert.match(
    metrics,
    /kubelet_pod_requests_get_total\{server_api_version="v1",status_code="ResourceExhausted"\} 1/,
  );
  assert.match(
    metrics,
    /kubelet_pod_requests_get_total\{server_api_version="v1",status_code="OK"\} 5/,
  );
  assert.match(
    metrics,
    /kubelet_pod_requests_watch_total\{server_api_version="v1alpha1",status_code="Canceled"\} 1/,
  );
});

Deno.test("WatchPods sends ADDED sorted by UID, INITIAL_SYNC_COMPLETE, then live events", async () => {
  await using h = await startHarness();
  await synced(h, [makePod({ uid: UID_B, name: "b" }), makePod({ uid: UID_A, name: "a" })]);
  const alpha = watch(h.v1alpha1);
  const packageless = watch(h.v1);
  await alpha.waitFor(3);
  await packageless.waitFor(2);
  h.source.set([makePod({ uid: UID_A, name: "a", labels: { x: "1" } })]);
  await h.daemon.relistOnce();
  await alpha.waitFor(5);
  await packageless.waitFor(4);
  const types = alpha.messages.map((m) => (m as { type: string }).type);
  assert.deepEqual(types, ["ADDED", "ADDED", "INITIAL_SYNC_COMPLETE", "MODIFIED", "DELETED"]);
  const uids = alpha.messages.map((m) => {
    const pod = (m as { pod?: Buffer }).pod;
    return pod && pod.length ? decodePod(pod).metadata.uid : "";
  });
  assert.deepEqual(uids, [UID_A, UID_B, "", UID_A, UID_B]);
  const deleted = decodePod((alpha.messages[4] as { pod: Buffer }).pod);
  assert.ok(deleted.metadata.deletionTimestamp);
  const packagelessPods = packageless.messages.map((m) =>
    (m as { pod: { metadata: Record<string, string> } }).pod.metadata
  );
  assert.deepEqual(packagelessPods.map((m) => m.uid), [UID_A, UID_B, UID_A, UID_B]);
  assert.ok(packagelessPods[3]!.deletionTimestamp);
  alpha.cancel();
  packageless.cancel();
  assert.equal((await alpha.ended).code, grpc.status.CANCELLED);
});

Deno.test("a watcher with mask status.phase gets no MODIFIED for a label change", async () => {
  await using h = await startHarness();
  await synced(h, [makePod({ uid: UID_A, name: "a", phase: "Pending" })]);
  const w = watch(h.v1alpha1, maskMetadata("status.phase"));
  await w.waitFor(2);
  h.source.set([makePod({ uid: UID_A, name: "a", phase: "Pending", labels: { tier: "web" } })]);
  await h.daemon.relistOnce();
  h.source.set([makePod({ uid: UID_A, name: "a", phase: "Running", labels: { tier: "web" } })]);
  await h.daemon.relistOnce();
  await w.waitFor(3);
  const last = w.messages[2] as { type: string; pod: Buffer };
  assert.equal(last.type, "MODIFIED");
  assert.equal(decodePod(last.pod).status!.phase, "Running");
  assert.equal(w.messages.length, 3);
  w.cancel();
  await w.ended;
});

Deno.test("a slow watcher is dropped with RESOURCE_EXHAUSTED while a fast one gets every event", async () => {
  await using h = await startHarness({ flags: ["--watch-queue-size", "5"] });
  const big = "x".repeat(60_000);
  const pods = (n: number) =>
    Array.from({ length: 20 }, (_, i) =>
      makePod({
        uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        name: `p${i}`,
        annotations: { gen: String(n), big },
      }));
  await synced(h, pods(0));
  const fast = watch(h.v1alpha1);
  const slow = watch(h.v1alpha1);
  await fast.waitFor(21);
  await slow.waitFor(21);
  slow.pause();
  let produced = 0;
  for (let gen = 1; gen <= 40; gen++) {
    h.source.set(pods(gen));
    await h.daemon.relistOnce();
    produced += 20;
    await fast.waitFor(21 + produced);
  }
  const metrics = (await h.http("/metrics")).body;
  const dropped = Number(/kubelet_pod_watch_events_dropped_total (\d+)/.exec(metrics)?.[1]);
  assert.ok(dropped > 0, "dropped events are counted");
  // A paused grpc-js client reads the status only after the frames before it.
  slow.resume();
  const end = await slow.ended;
  assert.equal(end.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.equal(end.details, "watch client too slow, dropped");
  assert.equal(fast.messages.length, 21 + produced);
  assert.ok(slow.messages.length < 21 + produced);
  fast.cancel();
  await fast.ended;
});

Deno.test("shutdown ends open watches with UNAVAILABLE and removes the socket", async () => {
  const h = await startHarness();
  await synced(h);
  const w = watch(h.v1alpha1);
  await w.waitFor(3);
  const closing = h.daemon.close();
  const end = await w.ended;
  assert.equal(end.code, grpc.status.UNAVAILABLE);
  assert.equal(end.details, "server is shutting down");
  await closing;
  await assert.rejects(Deno.lstat(h.socket), Deno.errors.NotFound);
  await h[Symbol.asyncDispose]();
});

Deno.test("/readyz names the source that keeps the gate closed and why", async () => {
  await using h = await startHarness();
  h.source.failNext(new Error("kubelet said 401"));
  assert.equal(await h.daemon.relistOnce(), false);
  const ready = await h.http("/readyz");
  assert.equal(ready.status, 503);
  assert.match(ready.body, /source "fake" has not completed its first read/);
  assert.match(ready.body, /kubelet said 401/);
});
