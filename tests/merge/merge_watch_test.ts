import assert from "node:assert/strict";
import { PodCache } from "../../src/cache/mod.ts";
import { EventHub } from "../../src/events/mod.ts";
import type { Subscription } from "../../src/events/hub.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { PodMerger } from "../../src/merge/mod.ts";
import type { JsonObject } from "../../src/model/json.ts";
import { type PodObject, type PodSnapshot, snapshotOf } from "../../src/model/pod.ts";
import { encodePod, unrepresentablePaths } from "../../src/proto/mod.ts";
import type { PodSourceKind } from "../../src/sources/mod.ts";
import { StaticPodSource } from "../../src/sources/static/mod.ts";
import { FakeClock } from "../_fixtures/pods.ts";
import { runtimePod } from "./_runtime.ts";

const FIXTURE = new URL("../_fixtures/kubelet/pods.json", import.meta.url);
const KUBELET_PODS: PodObject[] = JSON.parse(Deno.readTextFileSync(FIXTURE)).items;

const MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: kube-scheduler
  namespace: kube-system
  labels: {component: kube-scheduler}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  containers:
  - name: kube-scheduler
    image: registry.k8s.io/kube-scheduler:v1.36.0
    resources: {requests: {cpu: 100m}}
    livenessProbe:
      httpGet: {host: 127.0.0.1, path: /healthz, port: 10259, scheme: HTTPS}
`;

function kubeletPod(prefix: string): PodObject {
  return structuredClone(KUBELET_PODS.find((p) => p.metadata.name.startsWith(prefix))!);
}

async function staticPods(clock: FakeClock): Promise<readonly PodSnapshot[]> {
  const dir = await Deno.makeTempDir({ prefix: "merge-static-" });
  try {
    await Deno.writeTextFile(`${dir}/kube-scheduler.yaml`, MANIFEST);
    const source = new StaticPodSource({ dir, nodeName: "node-1", clock, log: silentLogger });
    return await source.list(new AbortController().signal);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const SCHEDULER_UID = "0123456789abcdef0123456789abcdef";
const WEB_UID = "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b";
const JOB_UID = "3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a";

function schedulerRuntime(): PodSnapshot {
  return runtimePod({
    uid: SCHEDULER_UID,
    name: "kube-scheduler-node-1",
    namespace: "kube-system",
    created: "2026-03-01T09:57:05Z",
    hostNetwork: true,
    annotations: {
      "kubernetes.io/config.source": "file",
      "kubernetes.io/config.hash": SCHEDULER_UID,
    },
    containers: [{
      name: "kube-scheduler",
      id: "5".repeat(64),
      state: "running",
      created: "2026-03-01T09:57:06Z",
      started: "2026-03-01T09:57:07Z",
    }],
  });
}

function webRuntime(restarted: boolean): PodSnapshot {
  const first = {
    name: "nginx",
    id: "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
    created: "2026-03-01T10:00:04Z",
    started: "2026-03-01T10:00:05Z",
  };
  return runtimePod({
    uid: WEB_UID,
    name: "web-7d9c6b8f5-x2k4p",
    namespace: "shop",
    created: "2026-03-01T10:00:01Z",
    ip: "10.244.1.17",
    containers: restarted
      ? [
        { ...first, state: "exited", exitCode: 137, finished: "2026-03-01T10:30:00Z" },
        {
          name: "nginx",
          id: "b2".repeat(32),
          state: "running",
          attempt: 1,
          created: "2026-03-01T10:30:01Z",
          started: "2026-03-01T10:30:02Z",
        },
      ]
      : [{ ...first, state: "running" }],
  });
}

function jobRuntime(state: "running" | "exited"): PodSnapshot {
  return runtimePod({
    uid: JOB_UID,
    name: "report-29012345-abcde",
    namespace: "batch",
    created: "2026-03-01T11:00:01Z",
    containers: [{
      name: "report",
      id: "2000000000000000000000000000000000000000000000000000000000000002",
      state,
      exitCode: 0,
      created: "2026-03-01T11:00:02Z",
      started: "2026-03-01T11:00:03Z",
      finished: state === "exited" ? "2026-03-01T11:00:09Z" : undefined,
    }],
  });
}

/** What one watcher saw of each UID, checked against DESIGN.md §6.4 as events arrive. */
class WatchChecker {
  readonly events: { type: string; uid: string; phase: unknown }[] = [];
  #state = new Map<string, { deleted: boolean; phase: unknown; everRunning: boolean }>();

  constructor(subscription: Subscription) {
    for (const pod of subscription.snapshot) this.#see("ADDED", pod.uid, pod.pod);
  }

  async settle(subscription: Subscription): Promise<void> {
    while (subscription.pending > 0) {
      const item = await subscription.next();
      assert.equal(item.state, "event");
      if (item.state !== "event") return;
      const { type, pod } = item.event;
      this.#see(type, pod.uid, pod.pod);
    }
  }

  #see(type: string, uid: string, pod: Readonly<PodObject>): void {
    const phase = (pod.status as JsonObject | undefined)?.phase;
    const state = this.#state.get(uid);
    this.events.push({ type, uid, phase });
    assert.ok(phase, `pod ${uid} has an empty phase`);
    if (state === undefined) {
      assert.equal(type, "ADDED", `first event of ${uid} is ${type}`);
      this.#state.set(uid, { deleted: false, phase, everRunning: phase === "Running" });
      return;
    }
    assert.ok(!state.deleted, `event ${type} after DELETED for ${uid}`);
    assert.notEqual(type, "ADDED", `second ADDED for ${uid}`);
    if (state.everRunning) assert.notEqual(phase, "Pending", `${uid} went from Running to Pending`);
    if (state.phase === "Succeeded" || state.phase === "Failed") {
      assert.equal(phase, state.phase, `${uid} left terminal phase ${state.phase}`);
    }
    if (type === "DELETED") {
      assert.ok(pod.metadata.deletionTimestamp, "DELETED without deletionTimestamp");
    }
    state.deleted = type === "DELETED";
    state.phase = phase;
    state.everRunning ||= phase === "Running";
  }
}

Deno.test("PodMerger views keep the watch invariants across source changes", async () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 1, 9, 57, 0));
  const { metrics } = createMetricsRegistry();
  const cache = new PodCache({ encode: encodePod, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const merger = new PodMerger();
  const apply = (kind: PodSourceKind, snapshots: readonly PodSnapshot[]) =>
    hub.publish(cache.apply(merger.update(kind, snapshots)));

  const manifests = await staticPods(clock);
  const derived = manifests[0]!.uid;
  apply("static", manifests);
  apply("kubelet", [snapshotOf(kubeletPod("web-")), snapshotOf(kubeletPod("api-"))]);
  apply("cri", []);

  const controller = new AbortController();
  const watch = hub.subscribe({ signal: controller.signal, queueLimit: 1000 });
  const checker = new WatchChecker(watch);
  assert.deepEqual(
    watch.snapshot.map((p) => p.uid).sort(),
    [derived, WEB_UID, "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"].sort(),
  );

  const steps: [PodSourceKind, PodSnapshot[]][] = [
    // The runtime runs the static pod (kubelet's UID) and the web pod.
    ["cri", [schedulerRuntime(), webRuntime(false)]],
    // The web container restarts; the kubelet has not noticed yet.
    ["cri", [schedulerRuntime(), webRuntime(true)]],
    // A job starts and completes; the kubelet's copy still says Running.
    ["kubelet", [
      snapshotOf(kubeletPod("web-")),
      snapshotOf(kubeletPod("api-")),
      snapshotOf(kubeletPod("report-")),
    ]],
    ["cri", [schedulerRuntime(), webRuntime(true), jobRuntime("running")]],
    ["cri", [schedulerRuntime(), webRuntime(true), jobRuntime("exited")]],
    // The runtime removes the job's sandbox before the kubelet's next poll.
    ["cri", [schedulerRuntime(), webRuntime(true)]],
    // The API deletes web: the kubelet drops it first, then the runtime.
    ["kubelet", [snapshotOf(kubeletPod("api-")), snapshotOf(kubeletPod("report-"))]],
    ["cri", [schedulerRuntime()]],
    // The manifest is removed while the runtime still runs it, then the runtime stops it.
    ["static", []],
    ["cri", []],
  ];
  for (const [kind, snapshots] of steps) {
    clock.advance(1000);
    apply(kind, snapshots);
    await checker.settle(watch);
  }
  controller.abort();

  const byUid = (uid: string) =>
    checker.events.filter((e) => e.uid === uid).map((e) => `${e.type}:${e.phase}`);
  assert.deepEqual(byUid(derived), ["ADDED:Pending", "DELETED:Pending"]);
  assert.equal(byUid(SCHEDULER_UID)[0], "ADDED:Running");
  assert.equal(byUid(SCHEDULER_UID).at(-1), "DELETED:Running");
  assert.deepEqual(byUid(JOB_UID).slice(-1), ["MODIFIED:Succeeded"], "terminal phase kept");
  assert.equal(byUid(WEB_UID).at(-1), "DELETED:Running");
  assert.equal(
    // Its children exist at 0 from the start (seeded): the sum says whether one counted.
    await metrics.invariantCorrections.get().then((m) =>
      m.values.reduce((sum, v) => sum + v.value, 0)
    ),
    0,
    "the merger itself never needed the cache's corrections",
  );
  assert.deepEqual(
    cache.list().map((p) => p.uid),
    ["2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f", JOB_UID].sort(),
  );
});

Deno.test("PodMerger views encode to protobuf without losing fields", async () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 1, 9, 57, 0));
  const merger = new PodMerger();
  merger.update("static", await staticPods(clock));
  merger.update("kubelet", KUBELET_PODS.map((p) => snapshotOf(structuredClone(p))));
  const view = merger.update("cri", [schedulerRuntime(), webRuntime(true), jobRuntime("exited")]);
  assert.equal(view.length, 5);
  for (const snapshot of view) {
    assert.deepEqual(unrepresentablePaths(snapshot.pod), [], snapshot.pod.metadata.name);
    assert.ok(encodePod(snapshot.pod).length > 0);
  }
});
