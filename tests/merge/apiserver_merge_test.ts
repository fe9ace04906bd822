// DESIGN.md §17 in the merge: spec and metadata from the API server, the
// runtime's status for what the runtime knows, the API server's status
// (Pending) for pods scheduled here and not started, mirror pods joined to
// their static pods.
import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import { type PodObject, type PodSnapshot, snapshotOf } from "../../src/model/pod.ts";
import { CONFIG_ANNOTATION } from "../../src/model/kubelet_keys.ts";
import { PodMerger } from "../../src/merge/mod.ts";
import { runtimePod } from "./_runtime.ts";

const UID = "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b";

function apiPod(uid: string, name: string, labels: Record<string, string>): PodObject {
  return {
    metadata: {
      uid,
      name,
      namespace: "shop",
      labels,
      resourceVersion: "4711",
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        name: "web-7d9c6b8f5",
        uid: "rs",
      }],
      creationTimestamp: "2026-03-01T10:00:00Z",
    },
    spec: {
      nodeName: "node-1",
      serviceAccountName: "web",
      restartPolicy: "Always",
      containers: [{ name: "nginx", image: "nginx:1.27" }],
    },
    status: {
      phase: "Pending",
      conditions: [{ type: "PodScheduled", status: "True" }],
    },
  };
}

function runtime(uid: string): PodSnapshot {
  return runtimePod({
    uid,
    name: "web-7d9c6b8f5-x2k4p",
    namespace: "shop",
    created: "2026-03-01T10:00:01Z",
    ip: "10.244.1.17",
    containers: [{
      name: "nginx",
      id: "a".repeat(64),
      state: "running",
      created: "2026-03-01T10:00:04Z",
      started: "2026-03-01T10:00:05Z",
    }],
  });
}

Deno.test("PodMerger serves an API server pod that has not started as the API server has it", () => {
  const merger = new PodMerger();
  const pending = snapshotOf(apiPod(UID, "web-7d9c6b8f5-x2k4p", { app: "web" }));
  const view = merger.update("apiserver", [pending]);
  assert.equal(view[0], pending);
  assert.equal(view[0]!.pod.status?.phase, "Pending");
});

Deno.test("PodMerger takes spec and metadata from the API server and status from the runtime", () => {
  const merger = new PodMerger();
  merger.update("cri", [runtime(UID)]);
  merger.update("kubelet", [snapshotOf(apiPod(UID, "web-7d9c6b8f5-x2k4p", { app: "old" }))]);
  const view = merger.update("apiserver", [
    snapshotOf(apiPod(UID, "web-7d9c6b8f5-x2k4p", { app: "web" })),
  ]);
  assert.equal(view.length, 1);
  const pod = view[0]!.pod;
  assert.deepEqual(pod.metadata.labels, { app: "web" }, "the API server's metadata wins");
  assert.equal(pod.spec?.serviceAccountName, "web");
  assert.equal((pod.metadata.ownerReferences as JsonObject[])[0]!.kind, "ReplicaSet");
  const status = pod.status!;
  assert.equal(status.phase, "Running", "the runtime knows the container runs");
  assert.equal(status.podIP, "10.244.1.17");
  const nginx = (status.containerStatuses as JsonObject[])[0]!;
  assert.deepEqual(nginx.state, { running: { startedAt: "2026-03-01T10:00:05Z" } });
});

Deno.test("PodMerger joins a mirror pod, keyed by its hash, to the static pod it mirrors", () => {
  const merger = new PodMerger();
  const hash = "0123456789abcdef0123456789abcdef";
  const derived = "d".repeat(32);
  const annotations = {
    [CONFIG_ANNOTATION.source]: "file",
    [CONFIG_ANNOTATION.hash]: hash,
    [CONFIG_ANNOTATION.mirror]: hash,
  };
  const mirror = snapshotOf({
    metadata: { uid: hash, name: "etcd-node-1", namespace: "kube-system", annotations },
    spec: { nodeName: "node-1", containers: [{ name: "etcd", image: "etcd" }] },
    status: { phase: "Running" },
  });
  const manifest = snapshotOf({
    metadata: {
      uid: derived,
      name: "etcd-node-1",
      namespace: "kube-system",
      annotations: { [CONFIG_ANNOTATION.source]: "file", [CONFIG_ANNOTATION.hash]: derived },
    },
    spec: { nodeName: "node-1", containers: [{ name: "etcd", image: "etcd" }] },
  });
  merger.update("static", [manifest]);
  const view = merger.update("apiserver", [mirror]);
  assert.deepEqual(view.map((s) => s.uid), [hash]);
  assert.equal(view[0]!.pod.metadata.annotations?.[CONFIG_ANNOTATION.mirror], hash);
});
