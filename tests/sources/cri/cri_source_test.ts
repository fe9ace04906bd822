import assert from "node:assert/strict";
import type { Metrics } from "../../../src/metrics/metrics.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import {
  type KubeletPodSpec,
  removeKubeletPod,
  runKubeletPod,
  startKubeletContainer,
} from "../../../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../../../src/sim/runtime/cri_runtime.ts";
import { SourceUnavailableError } from "../../../src/sources/mod.ts";
import {
  CRI_STATUS,
  CriCallError,
  CriPodSource,
  detectRuntimeEndpoint,
  parseRuntimeEndpoint,
  UNNAMED_RUNTIME,
} from "../../../src/sources/cri/mod.ts";
import { poll } from "../../_support/poll.ts";
import { Prng } from "../../_support/prng.ts";
import { byUid, Harness, runPods } from "./_harness.ts";

async function gaugeValue(metrics: Metrics): Promise<number | undefined> {
  return (await metrics.runtimeReachable.get()).values[0]?.value;
}

Deno.test("CriPodSource.list() inspects only new or changed items and reuses snapshots", async () => {
  await using h = await Harness.start();
  const [, second] = await runPods(h.runtime, 3);
  h.runtime.resetCalls();

  const first = byUid(await h.list());
  assert.equal(first.size, 3);
  assert.equal(h.runtime.calls.podSandboxStatus, 3);
  assert.equal(h.runtime.calls.containerStatus, 3);
  assert.equal(h.runtime.calls.version, 1, "runtime name asked once");

  h.runtime.resetCalls();
  const again = byUid(await h.list());
  assert.deepEqual(
    { ...h.runtime.calls },
    {
      ...h.runtime.calls,
      listPodSandbox: 1,
      listContainers: 1,
      podSandboxStatus: 0,
      containerStatus: 0,
    },
  );
  assert.equal(h.runtime.calls.version, 0);
  for (const [uid, snap] of first) assert.equal(again.get(uid), snap, `${uid} reused`);

  h.runtime.exitContainer(second!.containerIds.app!, { exitCode: 7 });
  h.runtime.resetCalls();
  const third = byUid(await h.list());
  assert.equal(h.runtime.calls.containerStatus, 1);
  assert.equal(h.runtime.calls.podSandboxStatus, 0);
  assert.equal(third.get("uid-0"), first.get("uid-0"));
  assert.equal(third.get("uid-2"), first.get("uid-2"));
  assert.notEqual(third.get("uid-1"), first.get("uid-1"));
  const status = third.get("uid-1")!.pod.status!;
  const [cs] = status.containerStatuses as {
    state: { terminated?: { exitCode: number; reason: string } };
  }[];
  assert.deepEqual(
    { exitCode: cs!.state.terminated?.exitCode, reason: cs!.state.terminated?.reason },
    { exitCode: 7, reason: "Error" },
  );
  assert.match(
    String((status.containerStatuses as { containerID: string }[])[0]!.containerID),
    /^containerd:\/\//,
  );
  assert.equal(await gaugeValue(h.metrics), 1);
});

Deno.test("CriPodSource.list() gives the very list of last time while nothing changed", async () => {
  await using h = await Harness.start();
  const [first, second] = await runPods(h.runtime, 3);
  const listed = await h.list();
  assert.equal(await h.list(), listed, "no pod rebuilt, added or gone: the same array");
  h.runtime.exitContainer(second!.containerIds.app!, { exitCode: 1 });
  const changed = await h.list();
  assert.notEqual(changed, listed, "a pod rebuilt: a new list");
  assert.equal(await h.list(), changed);
  await h.runtime.stopPodSandbox({ podSandboxId: first!.sandboxId });
  await h.runtime.removePodSandbox({ podSandboxId: first!.sandboxId });
  const fewer = await h.list();
  assert.notEqual(fewer, changed, "a pod gone: a new list");
  assert.deepEqual(fewer.map((s) => s.uid).sort(), ["uid-1", "uid-2"]);
});

Deno.test("CriPodSource.list() drops a removed pod and adds a new one", async () => {
  await using h = await Harness.start();
  const [first] = await runPods(h.runtime, 2);
  const before = byUid(await h.list());
  await h.runtime.stopPodSandbox({ podSandboxId: first!.sandboxId });
  await h.runtime.removePodSandbox({ podSandboxId: first!.sandboxId });
  await runKubeletPod(h.runtime, {
    name: "late",
    uid: "uid-late",
    containers: [{ name: "app", image: "busybox:1" }],
  });
  const after = byUid(await h.list());
  assert.deepEqual([...after.keys()].sort(), ["uid-1", "uid-late"]);
  assert.equal(after.get("uid-1"), before.get("uid-1"));
});

Deno.test("CriPodSource.list() re-inspects an item whose inspection failed", async () => {
  await using h = await Harness.start();
  await runPods(h.runtime, 1);
  h.runtime.failNext("containerStatus", CRI_STATUS.internal);
  const first = await h.list();
  assert.equal(first.length, 1, "the pod is listed from what is known");
  h.runtime.resetCalls();
  const second = await h.list();
  assert.equal(h.runtime.calls.containerStatus, 1, "inspected again");
  const cs =
    (second[0]!.pod.status!.containerStatuses as { state: { running?: { startedAt?: string } } }[])[
      0
    ];
  assert.ok(cs?.state.running?.startedAt, "startedAt from the status");
  h.runtime.resetCalls();
  const third = await h.list();
  assert.equal(h.runtime.calls.containerStatus, 0);
  assert.equal(third[0], second[0]);
});

Deno.test("CriPodSource.list() fails while the runtime is down and recovers after its restart", async () => {
  await using h = await Harness.start();
  await runPods(h.runtime, 2);
  const before = byUid(await h.list());

  await h.server.close();
  await assert.rejects(h.list(), (err) => {
    assert.ok(err instanceof SourceUnavailableError);
    assert.equal(err.reason, "unavailable");
    return true;
  });
  assert.equal(await gaugeValue(h.metrics), 0);

  await h.restartServer();
  const after = await poll(async () => {
    try {
      return byUid(await h.list());
    } catch {
      return undefined;
    }
  });
  assert.equal(after.size, 2);
  for (const [uid, snap] of before) assert.equal(after.get(uid), snap, `${uid} unchanged`);
  assert.equal(await gaugeValue(h.metrics), 1);
});

Deno.test("CriPodSource.list() reports a timeout when a call exceeds its deadline", async () => {
  await using h = await Harness.start();
  const source = new CriPodSource({
    runtime: h.client,
    runtimeName: "containerd",
    callTimeoutMs: 200,
  });
  h.runtime.stallNext("listContainers");
  await assert.rejects(source.list(AbortSignal.timeout(10_000)), (err) => {
    assert.ok(err instanceof SourceUnavailableError);
    assert.equal(err.reason, "timeout");
    return true;
  });
});

Deno.test("CriPodSource.list() skips hostile items, counts each once, keeps the others", async () => {
  await using h = await Harness.start();
  const [bad] = await runPods(h.runtime, 2);
  // A lone surrogate encodes as invalid UTF-8 on the wire.
  h.runtime.tamperSandbox(bad!.sandboxId, (s) => {
    s.name = "bad\ud800";
    s.labels["io.kubernetes.pod.name"] = "bad\ud800";
  });
  const pods = await h.list();
  assert.deepEqual(pods.map((p) => p.uid), ["uid-1"]);
  await h.list();
  const rejected = await h.metrics.sourceItemsRejected.get();
  assert.deepEqual(
    rejected.values.map((v) => [v.labels.reason, v.value]),
    [["invalid_identity", 1]],
  );
});

Deno.test("CriPodSource.watchChanges() asks for a relist per runtime event before its first list", async () => {
  await using h = await Harness.start();
  const controller = new AbortController();
  let hints = 0;
  const done = h.source.watchChanges(controller.signal, { relist: () => hints++, view: () => {} });
  await poll(() => h.runtime.eventSubscribers > 0 ? true : undefined);
  await runPods(h.runtime, 1);
  await poll(() => hints >= 2 ? true : undefined);
  controller.abort();
  await done;
});

Deno.test("CriPodSource.watchChanges() resubscribes after the runtime restarts", async () => {
  await using h = await Harness.start();
  const controller = new AbortController();
  let hints = 0;
  const done = h.source.watchChanges(controller.signal, { relist: () => hints++, view: () => {} });
  await poll(() => h.runtime.eventSubscribers > 0 ? true : undefined);
  assert.equal(hints, 0);
  await h.restartServer();
  // The old subscription may still be counted for a moment after the server
  // closed: wait for the source to subscribe again, which it does only once
  // its old stream has ended (and it has asked for a relist).
  await poll(() => h.runtime.calls.getContainerEvents >= 2 ? true : undefined);
  assert.ok(hints >= 1, "the broken stream asked for a relist: events may have been lost");
  const broken = hints;
  await runPods(h.runtime, 1);
  await poll(() => hints > broken ? true : undefined);
  controller.abort();
  await done;
});

Deno.test("CriPodSource.watchChanges() stops quietly on UNIMPLEMENTED", async () => {
  await using h = await Harness.start({ eventsImplemented: false });
  let hints = 0;
  await h.source.watchChanges(new AbortController().signal, {
    relist: () => hints++,
    view: () => {},
  });
  assert.equal(hints, 0);
  const infos = h.logLines.filter((l) => l.level === "info");
  assert.equal(infos.length, 1);
  assert.match(String(infos[0]!.msg), /GetContainerEvents/);
  assert.equal(h.logLines.filter((l) => l.level === "warn" || l.level === "error").length, 0);
});

Deno.test("CriClient.version() answers the handshake with the runtime's name", async () => {
  await using h = await Harness.start();
  const v = await h.client.version();
  assert.equal(v.runtimeName, "containerd");
  assert.equal(v.runtimeApiVersion, "v1");
});

Deno.test("detectRuntimeEndpoint() picks the first socket that answers", async () => {
  await using h = await Harness.start();
  const found = await detectRuntimeEndpoint({
    candidates: ["unix:///nonexistent/cri.sock", `unix://${h.socketPath}`],
  });
  assert.equal(found.endpoint, `unix://${h.socketPath}`);
  assert.equal(found.version.runtimeName, "containerd");
  await assert.rejects(
    detectRuntimeEndpoint({ candidates: ["unix:///nonexistent/cri.sock"] }),
    (err) =>
      err instanceof SourceUnavailableError && err.reason === "not_found" &&
      err.message.includes('"unix:///nonexistent/cri.sock" (absent)'),
  );
});

Deno.test("parseRuntimeEndpoint() accepts unix endpoints and plain paths only", () => {
  assert.deepEqual(parseRuntimeEndpoint("unix:///run/containerd/containerd.sock"), {
    path: "/run/containerd/containerd.sock",
    target: "unix:///run/containerd/containerd.sock",
  });
  assert.equal(
    parseRuntimeEndpoint("/var/run/crio/crio.sock").target,
    "unix:///var/run/crio/crio.sock",
  );
  assert.throws(() => parseRuntimeEndpoint("tcp://127.0.0.1:1234"), TypeError);
  assert.throws(() => parseRuntimeEndpoint("relative.sock"), TypeError);
});

Deno.test("CriPodSource.list() picks up an exit reason the runtime records after the exit", async () => {
  await using h = await Harness.start();
  const [pod] = await runPods(h.runtime, 1);
  const id = pod!.containerIds["app"]!;
  await h.list();
  h.runtime.exitContainer(id, { exitCode: 137, reason: "Error" });
  const exited = await h.list();
  const reasonOf = (snapshots: readonly PodSnapshot[]) =>
    (snapshots[0]!.pod.status!.containerStatuses as {
      state: { terminated?: { reason?: string } };
    }[])[0]!.state.terminated?.reason;
  assert.equal(reasonOf(exited), "Error");
  // containerd records OOMKilled a moment after the exit, with no state change.
  h.runtime.tamperContainer(id, (c) => c.reason = "OOMKilled");
  assert.equal(reasonOf(await h.list()), "OOMKilled", "the exit is inspected once more");
  h.runtime.resetCalls();
  const settled = await h.list();
  assert.equal(h.runtime.calls.containerStatus, 0, "and then left alone");
  assert.equal(reasonOf(settled), "OOMKilled");
});

Deno.test("CriPodSource names container IDs as the runtime's Version does, never guessing containerd", async (t) => {
  /** The scheme of the first container ID a fresh source lists from `runtime`. */
  async function scheme(
    runtime: SimCriRuntime,
    reader: ConstructorParameters<typeof CriPodSource>[0]["runtime"] = runtime,
    runtimeName?: string,
  ): Promise<string> {
    await runPods(runtime, 1);
    const source = new CriPodSource({
      runtime: reader,
      ...(runtimeName === undefined ? {} : { runtimeName }),
    });
    const [snapshot] = await source.list(AbortSignal.timeout(10_000));
    const [status] = snapshot!.pod.status!.containerStatuses as { containerID: string }[];
    return status!.containerID.slice(0, status!.containerID.indexOf("://"));
  }

  await t.step("the name the runtime gives", async () => {
    assert.equal(await scheme(new SimCriRuntime({ runtimeName: "cri-o" })), "cri-o");
  });
  await t.step("the simulated runtime's own name by default", async () => {
    assert.equal(await scheme(new SimCriRuntime()), "pods-api-simulated");
  });
  await t.step("an empty name: unknown, not containerd", async () => {
    assert.equal(await scheme(new SimCriRuntime({ runtimeName: "" })), UNNAMED_RUNTIME);
    assert.equal(UNNAMED_RUNTIME, "unknown");
  });
  await t.step("an empty name given as an option: unknown", async () => {
    const runtime = new SimCriRuntime({ runtimeName: "containerd" });
    assert.equal(await scheme(runtime, runtime, ""), UNNAMED_RUNTIME);
  });
  await t.step("a runtime without Version: unknown", async () => {
    const runtime = new SimCriRuntime({ runtimeName: "containerd" });
    const reader = {
      listPodSandbox: runtime.listPodSandbox.bind(runtime),
      listContainers: runtime.listContainers.bind(runtime),
      podSandboxStatus: runtime.podSandboxStatus.bind(runtime),
      containerStatus: runtime.containerStatus.bind(runtime),
      getContainerEvents: runtime.getContainerEvents.bind(runtime),
    };
    assert.equal(await scheme(runtime, reader), UNNAMED_RUNTIME);
  });
});

Deno.test("CriPodSource.list() that fails after rechecking an exit still rechecks it next time", async () => {
  const runtime = new SimCriRuntime({ runtimeName: "containerd" });
  const [pod] = await runPods(runtime, 1);
  const exitedId = pod!.containerIds["app"]!;
  let failFor: string | undefined;
  const statusCalls: string[] = [];
  const source = new CriPodSource({
    runtime: {
      listPodSandbox: (request) => runtime.listPodSandbox(request),
      listContainers: (request) => runtime.listContainers(request),
      podSandboxStatus: (request) => runtime.podSandboxStatus(request),
      containerStatus: (request) => {
        statusCalls.push(String(request.containerId));
        if (request.containerId === failFor) {
          return Promise.reject(
            new CriCallError("connection reset", {
              code: CRI_STATUS.unavailable,
              method: "ContainerStatus",
            }),
          );
        }
        return runtime.containerStatus(request);
      },
      getContainerEvents: (request, options) => runtime.getContainerEvents(request, options),
    },
    nodeName: "node-1",
    // One call at a time: the recheck runs first, then the failing call.
    inspectConcurrency: 1,
  });
  const list = () => source.list(AbortSignal.timeout(10_000));
  const reasonOf = (snapshots: readonly PodSnapshot[]) =>
    (snapshots.find((s) => s.uid === "uid-0")!.pod.status!.containerStatuses as {
      state: { terminated?: { reason?: string } };
    }[])[0]!.state.terminated?.reason;
  await list();
  runtime.exitContainer(exitedId, { exitCode: 137, reason: "Error" });
  assert.equal(reasonOf(await list()), "Error");
  runtime.tamperContainer(exitedId, (c) => c.reason = "OOMKilled");
  const other = await runKubeletPod(runtime, {
    name: "pod-new",
    uid: "uid-new",
    containers: [{ name: "app", image: "busybox:1" }],
  });
  failFor = other.containerIds["app"]!;
  statusCalls.length = 0;
  await assert.rejects(list(), SourceUnavailableError);
  assert.deepEqual(statusCalls, [exitedId, failFor], "the recheck ran before the failure");
  failFor = undefined;
  assert.equal(reasonOf(await list()), "OOMKilled", "the failed list's recheck is not lost");
});

Deno.test("CriPodSource.list() through the gRPC client, which skips held items, equals a direct read at every step of a churn", async () => {
  await using h = await Harness.start();
  // The same runtime read directly: its lists are fresh objects every time.
  const direct = new CriPodSource({
    runtime: h.runtime,
    nodeName: "node-1",
    hostIPs: ["192.168.1.10"],
  });
  const prng = new Prng(20261202);
  const pods: {
    sandboxId: string;
    containerIds: Record<string, string>;
    spec: KubeletPodSpec;
    killed?: boolean;
  }[] = [];
  let next = 0;
  const run = async () => {
    const spec = { name: `pod-${next}`, uid: `uid-${next}`, labels: { app: `a${next % 3}` } };
    next++;
    const handle = await runKubeletPod(h.runtime, {
      ...spec,
      containers: [{ name: "app", image: "busybox:1" }, { name: "side", image: "busybox:1" }],
    });
    pods.push({ ...handle, spec });
  };
  for (let i = 0; i < 8; i++) await run();
  for (let step = 0; step < 40; step++) {
    const pod = pods.length > 0 ? prng.pick(pods) : undefined;
    switch (prng.int(5)) {
      case 0:
        await run();
        break;
      case 1:
        if (pod) {
          h.runtime.exitContainer(prng.pick(Object.values(pod.containerIds)), { exitCode: 1 });
        }
        break;
      case 2:
        if (pod) {
          h.runtime.killSandbox(pod.sandboxId);
          pod.killed = true;
        }
        break;
      case 3:
        if (pod) {
          await removeKubeletPod(h.runtime, pod.sandboxId);
          pods.splice(pods.indexOf(pod), 1);
        }
        break;
      default:
        if (pod && !pod.killed) {
          // A restart: a new attempt of a container, with a new ID.
          pod.containerIds["app"] = await startKubeletContainer(h.runtime, pod.sandboxId, {
            pod: pod.spec,
            container: { name: "app", image: "busybox:1" },
            attempt: step + 1,
          });
        }
    }
    const viaClient = await h.list();
    const viaRuntime = await direct.list(AbortSignal.timeout(10_000));
    assert.deepStrictEqual(byUid(viaClient), byUid(viaRuntime), `step ${step}`);
  }
});
