// Hostile sources (issue 7, items 2 and 3): a simulated CRI runtime, served
// over a real socket so its answers cross the wire, returns absurd data to a
// CriPodSource feeding the real daemon. Bad items are skipped and counted in
// pods_api_source_items_rejected_total, good pods are served, every pod on
// the API decodes. A hanging runtime times out and the next relist goes on.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { decodePod } from "../../src/proto/mod.ts";
import { runKubeletPod } from "../../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../../src/sim/runtime/cri_runtime.ts";
import { startCriServer } from "../../src/sim/runtime/cri_server.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { removeTree } from "../_support/remove_tree.ts";
import { rawClient, rawUnary, report, scrapedMetricValue, startTestDaemon } from "./_support.ts";

function uid(i: number): string {
  return `${i.toString(16).padStart(8, "0")}-1111-4111-8111-111111111111`;
}

async function listUids(socket: string): Promise<string[]> {
  return (await listPods(socket)).map((p) => p.metadata.uid!);
}

async function listPods(socket: string): Promise<PodObject[]> {
  const stub = rawClient(socket);
  try {
    return await new Promise((resolve, reject) => {
      stub.ListPods(Buffer.alloc(0), new grpc.Metadata(), {}, (err, value) => {
        if (err) return reject(err);
        // ListPodsResponse{repeated bytes pods = 1}
        const out: PodObject[] = [];
        let i = 0;
        const bytes = value!;
        const varint = () => {
          let v = 0;
          let s = 0;
          for (;;) {
            const b = bytes[i++]!;
            v += (b & 0x7f) * 2 ** s;
            if (b < 0x80) return v;
            s += 7;
          }
        };
        while (i < bytes.length) {
          varint();
          const len = varint();
          out.push(decodePod(bytes.subarray(i, i + len)));
          i += len;
        }
        resolve(out);
      });
    });
  } finally {
    stub.close();
  }
}

async function criWorld(callTimeoutMs = 5_000) {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-rel-cri-" });
  const runtime = new SimCriRuntime({ runtimeName: "containerd" });
  const server = await startCriServer(runtime, { socketPath: `${dir}/cri.sock` });
  const client = new CriClient(server.endpoint, { requestTimeoutMs: 30_000 });
  const registry = createMetricsRegistry();
  const source = new CriPodSource({
    runtime: client,
    nodeName: "test-node",
    callTimeoutMs,
    metrics: registry.metrics,
  });
  const d = await startTestDaemon({ sources: [source], registry });
  return {
    runtime,
    d,
    registry,
    async [Symbol.asyncDispose]() {
      await d[Symbol.asyncDispose]();
      client.close();
      await server.close();
      removeTree(dir);
    },
  };
}

const APP = [{ name: "app", image: "registry.k8s.io/pause:3.10" }];

Deno.test("CriPodSource behind the daemon skips and counts absurd runtime data and serves the good pods", async () => {
  await using w = await criWorld();
  const { runtime } = w;
  const good: string[] = [];
  for (let i = 0; i < 5; i++) {
    await runKubeletPod(runtime, { name: `good-${i}`, uid: uid(i), containers: APP });
    good.push(uid(i));
  }
  // 1. A sandbox with 10 000 labels and one with a 1 MiB annotation.
  const huge = await runKubeletPod(runtime, {
    name: "huge-labels",
    uid: uid(100),
    containers: APP,
  });
  runtime.tamperSandbox(huge.sandboxId, (s) => {
    for (let i = 0; i < 10_000; i++) s.labels[`k${i}`] = `v${i}`;
    s.annotations["big"] = "x".repeat(1 << 20);
  });
  // 2. Invalid UTF-8 on the wire: a lone surrogate encodes as ED A0 80.
  const utf8 = await runKubeletPod(runtime, { name: "bad-utf8", uid: uid(101), containers: APP });
  runtime.tamperSandbox(utf8.sandboxId, (s) => {
    s.name = "bad-\ud800-name";
    s.labels["app\udfff"] = "v\ud800";
  });
  runtime.tamperContainer(utf8.containerIds.app!, (c) => {
    c.name = "app\ud800";
    c.image = "img\udc00";
  });
  const badLabel = await runKubeletPod(runtime, {
    name: "bad-label",
    uid: uid(108),
    labels: { app: "ok" },
    containers: APP,
  });
  runtime.tamperSandbox(badLabel.sandboxId, (s) => {
    s.labels["tier\ud800"] = "x";
  });
  // 3. Negative and far-future timestamps.
  const times = await runKubeletPod(runtime, { name: "bad-times", uid: uid(102), containers: APP });
  runtime.tamperSandbox(times.sandboxId, (s) => {
    s.createdAt = -1e18;
  });
  runtime.tamperContainer(times.containerIds.app!, (c) => {
    c.startedAt = 9e24;
    c.createdAt = -5;
  });
  // 4. Three thousand containers in one sandbox.
  const many = Array.from({ length: 3_000 }, (_, i) => ({
    name: `c${i}`,
    image: "registry.k8s.io/pause:3.10",
  }));
  await runKubeletPod(runtime, { name: "crowded", uid: uid(103), containers: many });
  // 5. Duplicate IDs: a second sandbox and a container claiming an existing ID.
  const dupA = await runKubeletPod(runtime, { name: "dup-a", uid: uid(104), containers: APP });
  const dupB = await runKubeletPod(runtime, { name: "dup-b", uid: uid(105), containers: APP });
  runtime.tamperSandbox(dupB.sandboxId, (s) => {
    s.id = dupA.sandboxId;
  });
  runtime.tamperContainer(dupB.containerIds.app!, (c) => {
    c.id = dupA.containerIds.app!;
  });
  // 6. Invalid IDs and a sandbox naming no pod.
  const noId = await runKubeletPod(runtime, { name: "no-id", uid: uid(106), containers: APP });
  runtime.tamperSandbox(noId.sandboxId, (s) => {
    s.id = "../../etc\n";
  });
  const noUid = await runKubeletPod(runtime, { name: "no-uid", uid: uid(107), containers: APP });
  runtime.tamperSandbox(noUid.sandboxId, (s) => {
    s.uid = "";
    delete s.labels["io.kubernetes.pod.uid"];
  });

  assert.equal(await w.d.daemon.relistOnce(), true, "the relist survives the hostile data");
  const pods = await listPods(w.d.socket);
  const served = pods.map((p) => p.metadata.uid!);
  for (const pod of pods) {
    const json = JSON.stringify(pod);
    assert.ok(json.isWellFormed() && !json.includes("\ufffd"), `pod ${pod.metadata.uid} is clean`);
  }
  for (const u of good) assert.ok(served.includes(u), `good pod ${u} is served`);
  assert.ok(!served.includes(uid(107)), "a sandbox without UID is skipped");
  assert.ok(!served.includes(uid(101)), "a sandbox whose name is not UTF-8 is skipped");
  const labelled = pods.find((p) => p.metadata.uid === uid(108));
  assert.deepEqual(labelled?.metadata.labels, { app: "ok" }, "only the bad label is dropped");
  // Every pod the API serves decodes (listUids decoded each one) and has a sane identity.
  const rejected = await scrapedMetricValue(w.registry, "pods_api_source_items_rejected_total", {
    source: "cri",
  });
  const byReason: Record<string, number> = {};
  for (
    const reason of [
      "invalid_id",
      "duplicate_id",
      "invalid_identity",
      "invalid_label",
      "invalid_timestamp",
      "oversized_map",
    ]
  ) {
    byReason[reason] = await scrapedMetricValue(
      w.registry,
      "pods_api_source_items_rejected_total",
      {
        source: "cri",
        reason,
      },
    );
  }
  await report(
    "hostile-cri",
    `served ${served.length} pods; rejected ${rejected}: ${JSON.stringify(byReason)}`,
    { served: served.length, rejected, byReason },
  );
  for (const [reason, n] of Object.entries(byReason)) assert.ok(n > 0, `${reason} counted`);
  assert.ok(served.includes(uid(103)), "the pod with 3 000 containers is served");

  // A second relist over the same data counts nothing new (each item once).
  assert.equal(await w.d.daemon.relistOnce(), true);
  assert.equal(
    await scrapedMetricValue(w.registry, "pods_api_source_items_rejected_total", { source: "cri" }),
    rejected,
  );
  const stub = rawClient(w.d.socket);
  try {
    assert.equal((await rawUnary(stub, "ListPods", new Uint8Array())).code, grpc.status.OK);
  } finally {
    stub.close();
  }
});

Deno.test("CriPodSource behind the daemon times out a hanging runtime, keeps the pods and relists again", async () => {
  await using w = await criWorld(300);
  const { runtime } = w;
  for (let i = 0; i < 3; i++) {
    await runKubeletPod(runtime, { name: `p-${i}`, uid: uid(i), containers: APP });
  }
  assert.equal(await w.d.daemon.relistOnce(), true);
  const before = await listUids(w.d.socket);
  assert.equal(before.length, 3);
  for (const method of ["listPodSandbox", "listContainers"] as const) {
    runtime.stallNext(method);
    assert.equal(await w.d.daemon.relistOnce(), false, `a stalled ${method} fails the relist`);
    assert.deepEqual(await listUids(w.d.socket), before, "the cache keeps the last known pods");
  }
  runtime.down = true;
  assert.equal(await w.d.daemon.relistOnce(), false);
  runtime.down = false;
  await runKubeletPod(runtime, { name: "p-new", uid: uid(9), containers: APP });
  assert.equal(await w.d.daemon.relistOnce(), true, "the runtime answers again: relist goes on");
  assert.equal((await listUids(w.d.socket)).length, 4);
  assert.equal(await scrapedMetricValue(w.registry, "pods_api_relist_errors_total"), 3);
});
