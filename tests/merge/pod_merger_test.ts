import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import { type PodObject, type PodSnapshot, snapshotOf } from "../../src/model/pod.ts";
import { PodMerger } from "../../src/merge/mod.ts";
import { CONFIG_ANNOTATION } from "../../src/model/kubelet_keys.ts";
import {
  type RuntimeContainer,
  runtimePod,
  WEB_CONTAINER,
  WEB_UID,
  webRuntime,
} from "./_runtime.ts";

const FIXTURE = new URL("../_fixtures/kubelet/pods.json", import.meta.url);
const KUBELET_PODS: PodObject[] = JSON.parse(Deno.readTextFileSync(FIXTURE)).items;

/** A fresh copy of a fixture pod, by name prefix. */
function kubeletPod(prefix: string): PodObject {
  const pod = KUBELET_PODS.find((p) => p.metadata.name.startsWith(prefix));
  assert.ok(pod, `no fixture pod ${prefix}`);
  return structuredClone(pod);
}

function snap(pod: PodObject): PodSnapshot {
  return snapshotOf(pod);
}

function status(snapshot: PodSnapshot | undefined): JsonObject {
  assert.ok(snapshot, "pod missing from the merged view");
  assert.ok(snapshot.pod.status);
  return snapshot.pod.status;
}

function containerStatus(
  snapshot: PodSnapshot | undefined,
  name: string,
  list = "containerStatuses",
): JsonObject {
  const found = (status(snapshot)[list] as JsonObject[]).find((c) => c.name === name);
  assert.ok(found, `no status of container ${name}`);
  return found;
}

function condition(snapshot: PodSnapshot | undefined, type: string): JsonObject {
  const found = (status(snapshot).conditions as JsonObject[]).find((c) => c.type === type);
  assert.ok(found, `no condition ${type}`);
  return found;
}

function byUid(view: readonly PodSnapshot[], uid: string): PodSnapshot | undefined {
  return view.find((s) => s.uid === uid);
}

const API_UID = "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f";
const JOB_UID = "3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a";

function jobRuntime(exitCode: number): PodSnapshot {
  return runtimePod({
    uid: JOB_UID,
    name: "report-29012345-abcde",
    namespace: "batch",
    created: "2026-03-01T11:00:01Z",
    ip: "10.244.1.40",
    containers: [{
      name: "report",
      id: "2000000000000000000000000000000000000000000000000000000000000002",
      state: "exited",
      exitCode,
      created: "2026-03-01T11:00:02Z",
      started: "2026-03-01T11:00:03Z",
      finished: "2026-03-01T11:00:09Z",
    }],
  });
}

function apiRuntime(containers: RuntimeContainer[]): PodSnapshot {
  return runtimePod({
    uid: API_UID,
    name: "api-5c8d7f9b6-q7w8e",
    namespace: "shop",
    created: "2026-03-01T10:05:01Z",
    ip: "10.244.1.23",
    containers,
  });
}

const MIGRATE_DONE: RuntimeContainer = {
  name: "migrate",
  id: "1000000000000000000000000000000000000000000000000000000000000001",
  state: "exited",
  exitCode: 0,
  init: true,
  created: "2026-03-01T10:05:02Z",
  started: "2026-03-01T10:05:03Z",
  finished: "2026-03-01T10:05:20Z",
};
const SHIPPER_RUNNING: RuntimeContainer = {
  name: "log-shipper",
  id: "3000000000000000000000000000000000000000000000000000000000000003",
  state: "running",
  init: true,
  created: "2026-03-01T10:05:21Z",
  started: "2026-03-01T10:05:22Z",
};
const API_RUNNING: RuntimeContainer = {
  name: "api",
  id: "4000000000000000000000000000000000000000000000000000000000000004",
  state: "running",
  created: "2026-03-01T10:05:25Z",
  started: "2026-03-01T10:05:26Z",
};

Deno.test("PodMerger.update() serves a kubelet-only pod as the kubelet reports it", () => {
  const merger = new PodMerger();
  const web = snap(kubeletPod("web-"));
  const view = merger.update("kubelet", [web]);
  assert.equal(view.length, 1);
  assert.equal(view[0], web, "a pod with one input is passed through unchanged");
});

Deno.test("PodMerger.update() serves a runtime-only pod from CRI alone", () => {
  const merger = new PodMerger();
  merger.update("kubelet", [snap(kubeletPod("web-"))]);
  const orphan = runtimePod({
    uid: "orphan-uid",
    name: "debug",
    namespace: "default",
    created: "2026-03-01T12:00:00Z",
    containers: [{ name: "sh", id: "c-orphan", state: "running", created: "2026-03-01T12:00:01Z" }],
  });
  const view = merger.update("cri", [orphan]);
  assert.equal(view.length, 2);
  assert.equal(byUid(view, "orphan-uid"), orphan);
});

Deno.test("PodMerger.update() takes spec from the kubelet and status from the runtime", () => {
  const merger = new PodMerger();
  const kubelet = kubeletPod("web-");
  merger.update("kubelet", [snap(kubelet)]);
  const view = merger.update("cri", [webRuntime()]);
  const web = byUid(view, WEB_UID);
  assert.ok(web);
  assert.deepEqual(web.pod.spec, kubelet.spec, "the full spec is the kubelet's");
  assert.deepEqual(web.pod.metadata.ownerReferences, kubelet.metadata.ownerReferences);
  assert.equal(web.pod.metadata.labels?.["pod-template-hash"], "7d9c6b8f5");
  assert.equal(status(web).phase, "Running");
  assert.equal(status(web).qosClass, "Burstable", "fields CRI lacks come from the kubelet");
  assert.equal(status(web).podIP, "10.244.1.17");
  const nginx = containerStatus(web, "nginx");
  assert.equal(nginx.ready, true, "the kubelet's probe result holds for the same instance");
  assert.deepEqual(
    nginx.volumeMounts,
    (kubelet.status!.containerStatuses as JsonObject[])[0]!.volumeMounts,
  );
  assert.equal(condition(web, "Ready").status, "True");
  assert.equal(
    condition(web, "Ready").lastTransitionTime,
    "2026-03-01T10:00:09Z",
    "an unchanged condition keeps the kubelet's transition time",
  );
});

Deno.test("PodMerger.update() prefers the runtime when it is ahead of the kubelet", () => {
  const merger = new PodMerger();
  merger.update("kubelet", [snap(kubeletPod("web-"))]);
  const restarted = webRuntime([
    {
      name: "nginx",
      id: WEB_CONTAINER,
      state: "exited",
      exitCode: 137,
      created: "2026-03-01T10:00:04Z",
      started: "2026-03-01T10:00:05Z",
      finished: "2026-03-01T10:30:00Z",
    },
    {
      name: "nginx",
      id: "b2".repeat(32),
      state: "running",
      attempt: 1,
      created: "2026-03-01T10:30:01Z",
      started: "2026-03-01T10:30:02Z",
    },
  ]);
  const view = merger.update("cri", [restarted]);
  const web = byUid(view, WEB_UID);
  const nginx = containerStatus(web, "nginx");
  assert.equal(nginx.restartCount, 1);
  assert.equal(nginx.containerID, `containerd://${"b2".repeat(32)}`);
  assert.equal((nginx.lastState as { terminated: JsonObject }).terminated.exitCode, 137);
  assert.equal(nginx.ready, false, "a new instance with a readiness probe is not ready yet");
  assert.equal(nginx.started, true);
  assert.equal(status(web).phase, "Running");
  assert.equal(condition(web, "Ready").status, "False");
  assert.equal(condition(web, "Ready").message, "containers with unready status: [nginx]");
});

Deno.test("PodMerger.update() keeps the kubelet's status while the runtime lacks the pod", () => {
  const merger = new PodMerger();
  const api = snap(kubeletPod("api-"));
  merger.update("cri", []);
  const view = merger.update("kubelet", [api]);
  assert.equal(byUid(view, API_UID), api);
});

Deno.test("PodMerger.update() derives Succeeded and Failed from restartPolicy Never", async (t) => {
  const cases = [
    { exitCode: 0, phase: "Succeeded", reason: "PodCompleted" },
    { exitCode: 2, phase: "Failed", reason: "PodFailed" },
  ];
  for (const c of cases) {
    await t.step(`exit code ${c.exitCode}`, () => {
      const merger = new PodMerger();
      merger.update("kubelet", [snap(kubeletPod("report-"))]);
      const job = byUid(merger.update("cri", [jobRuntime(c.exitCode)]), JOB_UID);
      assert.equal(status(job).phase, c.phase);
      assert.equal(condition(job, "ContainersReady").reason, c.reason);
      assert.equal(condition(job, "Ready").status, "False");
      assert.equal(containerStatus(job, "report").ready, false);
    });
  }
  await t.step("the CRI view alone (restartPolicy unknown) stays Running", () => {
    assert.equal(status(jobRuntime(0)).phase, "Running");
  });
});

Deno.test("PodMerger.update() computes Initialized from init containers and sidecars", async (t) => {
  const merger = new PodMerger();
  const kubelet = kubeletPod("api-");
  merger.update("kubelet", [snap(kubelet)]);

  await t.step("a regular init container still running", () => {
    const api = byUid(
      merger.update("cri", [apiRuntime([{ ...MIGRATE_DONE, state: "running" }])]),
      API_UID,
    );
    assert.equal(status(api).phase, "Pending");
    const initialized = condition(api, "Initialized");
    assert.equal(initialized.status, "False");
    assert.equal(initialized.message, "containers with incomplete status: [migrate log-shipper]");
    assert.deepEqual(containerStatus(api, "api").state, { waiting: { reason: "PodInitializing" } });
    assert.deepEqual(containerStatus(api, "log-shipper", "initContainerStatuses").state, {
      waiting: { reason: "ContainerCreating" },
    });
  });

  await t.step("the sidecar runs but its startup probe has not passed", () => {
    const api = byUid(merger.update("cri", [apiRuntime([MIGRATE_DONE, SHIPPER_RUNNING])]), API_UID);
    assert.equal(containerStatus(api, "migrate", "initContainerStatuses").ready, true);
    assert.equal(containerStatus(api, "log-shipper", "initContainerStatuses").started, false);
    assert.equal(status(api).phase, "Pending");
    assert.equal(
      condition(api, "Initialized").message,
      "containers with incomplete status: [log-shipper]",
    );
  });

  await t.step("the kubelet reports the sidecar started", () => {
    const status = kubelet.status!;
    status.initContainerStatuses = [
      { name: "migrate", state: { terminated: { exitCode: 0, reason: "Completed" } }, ready: true },
      {
        name: "log-shipper",
        state: { running: { startedAt: "2026-03-01T10:05:22Z" } },
        containerID: `containerd://${SHIPPER_RUNNING.id}`,
        ready: true,
        started: true,
        restartCount: 0,
      },
    ];
    merger.update("kubelet", [snap(kubelet)]);
    const api = byUid(
      merger.update("cri", [apiRuntime([MIGRATE_DONE, SHIPPER_RUNNING, API_RUNNING])]),
      API_UID,
    );
    assert.equal(condition(api, "Initialized").status, "True");
    assert.equal(statusOf(api).phase, "Running");
    assert.equal(containerStatus(api, "api").ready, false, "readiness probe not passed yet");
    assert.equal(condition(api, "Ready").message, "containers with unready status: [api]");
  });

  await t.step("ready containers and a True readiness gate make the pod Ready", () => {
    const status = kubelet.status!;
    status.containerStatuses = [{
      name: "api",
      state: { running: { startedAt: "2026-03-01T10:05:26Z" } },
      containerID: `containerd://${API_RUNNING.id}`,
      ready: true,
      started: true,
      restartCount: 0,
    }];
    merger.update("kubelet", [snap(kubelet)]);
    const api = byUid(merger.current(), API_UID);
    assert.equal(condition(api, "Ready").status, "True");
    assert.equal(condition(api, "example.com/load-balancer-attached").status, "True");
  });

  await t.step("a readiness gate that is not True keeps the pod not Ready", () => {
    const conditions = kubelet.status!.conditions as JsonObject[];
    conditions[0] = { ...conditions[0], status: "False" };
    const api = byUid(merger.update("kubelet", [snap(kubelet)]), API_UID);
    assert.equal(condition(api, "Ready").reason, "ReadinessGatesNotReady");
    assert.equal(condition(api, "ContainersReady").status, "True");
  });
});

function statusOf(snapshot: PodSnapshot | undefined): JsonObject {
  return status(snapshot);
}

/** A manifest pod as the static source serves it (derived UID). */
function staticPod(uid: string): PodSnapshot {
  return snap({
    metadata: {
      uid,
      name: "kube-scheduler-node-1",
      namespace: "kube-system",
      annotations: {
        [CONFIG_ANNOTATION.source]: "file",
        [CONFIG_ANNOTATION.hash]: uid,
        [CONFIG_ANNOTATION.seen]: "2026-03-01T09:57:00Z",
      },
    },
    spec: {
      nodeName: "node-1",
      hostNetwork: true,
      restartPolicy: "Always",
      priorityClassName: "system-node-critical",
      containers: [{ name: "kube-scheduler", image: "registry.k8s.io/kube-scheduler:v1.36.0" }],
    },
    status: {
      phase: "Pending",
      containerStatuses: [{
        name: "kube-scheduler",
        state: { waiting: { reason: "ContainerCreating" } },
        ready: false,
        restartCount: 0,
      }],
    },
  });
}

function schedulerRuntime(uid: string, created: string): PodSnapshot {
  return runtimePod({
    uid,
    name: "kube-scheduler-node-1",
    namespace: "kube-system",
    created,
    hostNetwork: true,
    annotations: { [CONFIG_ANNOTATION.source]: "file", [CONFIG_ANNOTATION.hash]: uid },
    containers: [{
      name: "kube-scheduler",
      id: `c-${uid}`,
      state: "running",
      created,
      started: created,
    }],
  });
}

Deno.test("PodMerger.update() adopts the runtime's UID for a static pod", async (t) => {
  const merger = new PodMerger();
  const derived = "d".repeat(32);
  const real = "0123456789abcdef0123456789abcdef";
  const manifest = staticPod(derived);

  await t.step("before the kubelet starts it, the derived UID", () => {
    const view = merger.update("static", [manifest]);
    assert.deepEqual(view.map((s) => s.uid), [derived]);
    assert.equal(view[0], manifest);
  });

  await t.step("once the runtime runs it, the kubelet's UID", () => {
    const view = merger.update("cri", [schedulerRuntime(real, "2026-03-01T09:57:05Z")]);
    assert.deepEqual(view.map((s) => s.uid), [real]);
    const pod = view[0]!;
    assert.equal(pod.pod.metadata.uid, real);
    assert.equal(pod.pod.metadata.annotations?.[CONFIG_ANNOTATION.hash], real);
    assert.equal(pod.pod.spec?.priorityClassName, "system-node-critical");
    assert.equal(status(pod).phase, "Running");
    assert.equal(containerStatus(pod, "kube-scheduler").containerID, `containerd://c-${real}`);
  });

  await t.step("the newest runtime attempt wins when an old one lingers", () => {
    const newer = "fedcba9876543210fedcba9876543210";
    const view = merger.update("cri", [
      schedulerRuntime(real, "2026-03-01T09:57:05Z"),
      schedulerRuntime(newer, "2026-03-01T10:20:00Z"),
    ]);
    assert.deepEqual(view.map((s) => s.uid).sort(), [real, newer].sort());
    assert.equal(byUid(view, newer)!.pod.spec?.priorityClassName, "system-node-critical");
    assert.equal(
      byUid(view, real)!.pod.spec?.priorityClassName,
      undefined,
      "served from CRI alone",
    );
  });

  await t.step("the kubelet's UID wins over the runtime's guesswork", () => {
    const kubelet = structuredClone(staticPod(real).pod) as PodObject;
    const view = merger.update("kubelet", [snap(kubelet)]);
    const merged = byUid(view, real);
    assert.ok(merged);
    assert.equal(merged.pod.spec?.priorityClassName, "system-node-critical");
    assert.equal(status(merged).phase, "Running");
  });

  await t.step("without runtime or kubelet, back to the derived UID", () => {
    merger.update("kubelet", []);
    const view = merger.update("cri", []);
    assert.deepEqual(view.map((s) => s.uid), [derived]);
  });
});

Deno.test("PodMerger.update() removes a pod only when no source has it", () => {
  const merger = new PodMerger();
  merger.update("kubelet", [snap(kubeletPod("web-"))]);
  merger.update("cri", [webRuntime()]);
  let view = merger.update("kubelet", []);
  assert.deepEqual(view.map((s) => s.uid), [WEB_UID], "the runtime still runs it");
  view = merger.update("cri", []);
  assert.deepEqual(view, []);
});

Deno.test("PodMerger.update() returns the same objects for unchanged pods", () => {
  const merger = new PodMerger();
  const kubeletView = KUBELET_PODS.map((p) => snap(structuredClone(p)));
  merger.update("kubelet", kubeletView);
  const web = webRuntime();
  const job = jobRuntime(0);
  const first = merger.update("cri", [web, job]);
  assert.equal(merger.update("cri", [web, job].slice()).length, first.length);
  const again = merger.update("cri", [web, job].slice());
  assert.equal(again, first, "no input changed: the very same array");
  for (const s of first) assert.ok(again.includes(s));

  const changedJob = jobRuntime(1);
  const third = merger.update("cri", [web, changedJob]);
  assert.notEqual(third, first);
  assert.equal(byUid(third, WEB_UID), byUid(first, WEB_UID), "an untouched pod is the same object");
  assert.notEqual(byUid(third, JOB_UID), byUid(first, JOB_UID));
  assert.equal(merger.update("cri", [web, changedJob]), third);
});

Deno.test("PodMerger.update() rejects an unknown source kind", () => {
  const merger = new PodMerger();
  assert.throws(
    () => merger.update("etcd" as unknown as "cri", []),
    RangeError,
  );
});

Deno.test("PodMerger.update() keeps a terminal phase when the runtime drops the pod first", () => {
  const merger = new PodMerger();
  const kubelet = snap(kubeletPod("report-"));
  merger.update("kubelet", [kubelet]);
  assert.equal(status(byUid(merger.update("cri", [jobRuntime(0)]), JOB_UID)).phase, "Succeeded");
  const job = byUid(merger.update("cri", []), JOB_UID);
  assert.equal(status(job).phase, "Succeeded", "the kubelet's stale Running is not served");
  assert.deepEqual(job!.pod.spec, kubelet.pod.spec);
  const caughtUp = kubeletPod("report-");
  caughtUp.status!.phase = "Succeeded";
  const fresh = snap(caughtUp);
  assert.equal(byUid(merger.update("kubelet", [fresh]), JOB_UID), fresh);
});
