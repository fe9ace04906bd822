import assert from "node:assert/strict";
import type { JsonObject } from "../../../src/model/json.ts";
import type { PodObject } from "../../../src/model/pod.ts";
import {
  containerIdScheme,
  type ContainerInput,
  type ConvertOptions,
  convertPod,
  type SandboxInput,
  UNNAMED_RUNTIME,
} from "../../../src/sources/cri/mod.ts";
import { at, container, rejections, sandbox, T0 } from "./_builders.ts";

function convert(
  sandboxes: SandboxInput[],
  containers: ContainerInput[],
  options: ConvertOptions = {},
): PodObject {
  // The runtime these fixtures play is containerd, as its Version would say.
  const pod = convertPod(sandboxes, containers, {
    nodeName: "node-1",
    runtimeName: "containerd",
    ...options,
  });
  assert.ok(pod, "pod was rejected");
  return pod;
}

function status(pod: PodObject): JsonObject {
  assert.ok(pod.status);
  return pod.status;
}

function statuses(pod: PodObject, key = "containerStatuses"): JsonObject[] {
  return (status(pod)[key] ?? []) as JsonObject[];
}

function conditions(pod: PodObject): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const c of status(pod).conditions as JsonObject[]) out[c.type as string] = c;
  return out;
}

Deno.test("convertPod() maps each CRI container state as the kubelet does", async (t) => {
  const cases: {
    name: string;
    input: Parameters<typeof container>[0];
    state: JsonObject;
    ready: boolean;
    phase: string;
  }[] = [
    {
      name: "CONTAINER_RUNNING is running with startedAt",
      input: { state: "running", created: 1, started: 2 },
      state: { running: { startedAt: at(2) } },
      ready: true,
      phase: "Running",
    },
    {
      name: "CONTAINER_CREATED is waiting ContainerCreating",
      input: { state: "created" },
      state: { waiting: { reason: "ContainerCreating" } },
      ready: false,
      phase: "Pending",
    },
    {
      name: "CONTAINER_EXITED with 0 is terminated Completed",
      input: { state: "exited", created: 1, started: 2, finished: 9, exitCode: 0 },
      state: {
        terminated: {
          exitCode: 0,
          reason: "Completed",
          startedAt: at(2),
          finishedAt: at(9),
          containerID: "containerd://c-uid-1-app-0",
        },
      },
      ready: false,
      phase: "Running",
    },
    {
      name: "CONTAINER_EXITED with 7 is terminated Error",
      input: { state: "exited", exitCode: 7, message: "bye" },
      state: {
        terminated: {
          exitCode: 7,
          reason: "Error",
          message: "bye",
          startedAt: at(2),
          finishedAt: at(6),
          containerID: "containerd://c-uid-1-app-0",
        },
      },
      ready: false,
      phase: "Running",
    },
    {
      name: "the runtime's reason (OOMKilled) is kept",
      input: { state: "exited", exitCode: 137, reason: "OOMKilled" },
      state: {
        terminated: {
          exitCode: 137,
          reason: "OOMKilled",
          startedAt: at(2),
          finishedAt: at(6),
          containerID: "containerd://c-uid-1-app-0",
        },
      },
      ready: false,
      phase: "Running",
    },
    {
      name: "CONTAINER_UNKNOWN is waiting ContainerStatusUnknown",
      input: { state: "unknown" },
      state: { waiting: { reason: "ContainerStatusUnknown" } },
      ready: false,
      phase: "Pending",
    },
    {
      name: "an exited container whose status could not be read is terminated unknown",
      input: { state: "exited", noStatus: true },
      state: {
        terminated: {
          exitCode: 137,
          reason: "ContainerStatusUnknown",
          message: "The container status could not be read from the runtime",
          containerID: "containerd://c-uid-1-app-0",
        },
      },
      ready: false,
      phase: "Running",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const pod = convert([sandbox()], [container(c.input)]);
      const [cs] = statuses(pod);
      assert.ok(cs);
      assert.deepEqual(cs.state, c.state);
      assert.equal(cs.ready, c.ready);
      assert.equal(cs.started, "running" in c.state);
      assert.equal(status(pod).phase, c.phase);
    });
  }
});

Deno.test("convertPod() builds a complete pod from a running kubelet pod", () => {
  const pod = convert(
    [sandbox({ labels: { app: "web", tier: "front" }, annotations: { "team": "a" } })],
    [container({ created: 1, started: 2, userImage: "nginx:1.25" })],
    { hostIPs: ["192.168.1.10"], runtimeName: "containerd" },
  );
  assert.deepEqual(pod, {
    metadata: {
      name: "web",
      namespace: "default",
      uid: "uid-1",
      creationTimestamp: at(0),
      labels: { app: "web", tier: "front" },
      annotations: { team: "a" },
    },
    spec: {
      nodeName: "node-1",
      containers: [{
        name: "app",
        image: "nginx:1.25",
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
      }],
    },
    status: {
      phase: "Running",
      conditions: [
        { type: "PodReadyToStartContainers", status: "True", lastTransitionTime: at(0) },
        { type: "Initialized", status: "True", lastTransitionTime: at(0) },
        { type: "Ready", status: "True", lastTransitionTime: at(2) },
        { type: "ContainersReady", status: "True", lastTransitionTime: at(2) },
        { type: "PodScheduled", status: "True", lastTransitionTime: at(0) },
      ],
      hostIP: "192.168.1.10",
      hostIPs: [{ ip: "192.168.1.10" }],
      podIP: "10.88.0.5",
      podIPs: [{ ip: "10.88.0.5" }],
      startTime: at(0),
      containerStatuses: [{
        name: "app",
        state: { running: { startedAt: at(2) } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: "docker.io/library/nginx:1.25",
        imageID: "sha256:0123abcd",
        containerID: "containerd://c-uid-1-app-0",
        started: true,
      }],
    },
  });
});

Deno.test("convertPod() prefixes container IDs with the runtime's name, unknown when it has none", () => {
  const id = (runtimeName?: string) => {
    const pod = convertPod([sandbox()], [container({ state: "running" })], {
      ...(runtimeName === undefined ? {} : { runtimeName }),
    });
    return statuses(pod!)[0]!.containerID;
  };
  assert.equal(id("cri-o"), "cri-o://c-uid-1-app-0");
  assert.equal(id(""), "unknown://c-uid-1-app-0");
  assert.equal(id(), "unknown://c-uid-1-app-0");
  assert.equal(containerIdScheme(""), UNNAMED_RUNTIME);
  assert.equal(containerIdScheme("containerd"), "containerd");
});

Deno.test("convertPod() shows the previous instance as lastState and counts restarts", async (t) => {
  await t.step("attempt 1 running after attempt 0 failed", () => {
    const pod = convert([sandbox()], [
      container({ attempt: 0, state: "exited", exitCode: 1, created: 1, finished: 5 }),
      container({ attempt: 1, state: "running", created: 11, started: 12, restartCount: "1" }),
    ]);
    const [cs] = statuses(pod);
    assert.ok(cs);
    assert.deepEqual(cs.state, { running: { startedAt: at(12) } });
    assert.deepEqual(cs.lastState, {
      terminated: {
        exitCode: 1,
        reason: "Error",
        startedAt: at(2),
        finishedAt: at(5),
        containerID: "containerd://c-uid-1-app-0",
      },
    });
    assert.equal(cs.restartCount, 1);
    assert.equal(cs.containerID, "containerd://c-uid-1-app-1");
  });
  await t.step("only the two newest instances count, in any input order", () => {
    const pod = convert([sandbox()], [
      container({ attempt: 2, state: "running", created: 21 }),
      container({ attempt: 0, state: "exited", exitCode: 3, created: 1 }),
      container({ attempt: 1, state: "exited", exitCode: 2, created: 11 }),
    ]);
    const [cs] = statuses(pod);
    assert.ok(cs);
    assert.equal(cs.restartCount, 2);
    assert.equal((cs.lastState as { terminated: JsonObject }).terminated.exitCode, 2);
  });
  await t.step("without the annotation, the attempt is the restart count", () => {
    const pod = convert([sandbox()], [container({ attempt: 3, restartCount: null })]);
    assert.equal(statuses(pod)[0]?.restartCount, 3);
  });
  await t.step("a malformed annotation falls back to the attempt", () => {
    const pod = convert([sandbox()], [container({ attempt: 2, restartCount: "-1x" })]);
    assert.equal(statuses(pod)[0]?.restartCount, 2);
  });
});

Deno.test("convertPod() keeps one pod per UID across sandbox attempts", async (t) => {
  await t.step("the newest ready sandbox gives IPs and metadata; startTime is the first", () => {
    const pod = convert([
      sandbox({ attempt: 0, ready: false, created: 0, ip: "", labels: { v: "old" } }),
      sandbox({ attempt: 1, ready: true, created: 30, ip: "10.88.0.9", labels: { v: "new" } }),
    ], [container({ sandboxId: "sb-uid-1-1", created: 31 })]);
    assert.deepEqual(pod.metadata.labels, { v: "new" });
    assert.equal(status(pod).podIP, "10.88.0.9");
    assert.equal(status(pod).startTime, at(0));
    assert.equal(conditions(pod).PodReadyToStartContainers?.status, "True");
    assert.equal(conditions(pod).PodReadyToStartContainers?.lastTransitionTime, at(30));
  });
  await t.step(
    "an older ready sandbox wins over a newer dead one, but is not ready to start",
    () => {
      const pod = convert([
        sandbox({ attempt: 0, ready: true, created: 0, ip: "10.88.0.2" }),
        sandbox({ attempt: 1, ready: false, created: 30, ip: "" }),
      ], []);
      assert.equal(status(pod).podIP, "10.88.0.2");
      assert.equal(conditions(pod).PodReadyToStartContainers?.status, "False");
    },
  );
  await t.step("no ready sandbox: no pod IPs", () => {
    const pod = convert([sandbox({ ready: false, ip: "10.88.0.2" })], []);
    assert.equal(status(pod).podIP, undefined);
    assert.equal(status(pod).podIPs, undefined);
    assert.equal(conditions(pod).PodReadyToStartContainers?.status, "False");
  });
});

Deno.test("convertPod() strips the kubelet's internal labels and annotations", () => {
  const pod = convert([
    sandbox({
      labels: { app: "web", "io.kubernetes.pod.name": "spoof", "example.com/x": "y" },
      annotations: {
        "kubernetes.io/config.source": "api",
        "io.kubernetes.container.hash": "abc",
        note: "kept",
      },
    }),
  ], [container()]);
  assert.deepEqual(pod.metadata.labels, { app: "web", "example.com/x": "y" });
  assert.deepEqual(pod.metadata.annotations, {
    "kubernetes.io/config.source": "api",
    note: "kept",
  });
  assert.equal(pod.metadata.name, "web");
});

Deno.test("convertPod() reads the spec facts the kubelet stores in annotations", async (t) => {
  await t.step("ports, termination message path and policy, grace period", () => {
    const pod = convert([sandbox()], [
      container({
        annotations: {
          "io.kubernetes.container.ports":
            '[{"name":"http","containerPort":8080,"protocol":"TCP"},{"containerPort":53,"protocol":"UDP","hostPort":5353}]',
          "io.kubernetes.container.terminationMessagePath": "/tmp/msg",
          "io.kubernetes.container.terminationMessagePolicy": "FallbackToLogsOnError",
          "io.kubernetes.pod.terminationGracePeriod": "45",
        },
      }),
    ]);
    const spec = pod.spec as JsonObject;
    assert.equal(spec.terminationGracePeriodSeconds, 45);
    assert.deepEqual((spec.containers as JsonObject[])[0], {
      name: "app",
      image: "docker.io/library/nginx:1.25",
      ports: [
        { name: "http", containerPort: 8080, protocol: "TCP" },
        { hostPort: 5353, containerPort: 53, protocol: "UDP" },
      ],
      terminationMessagePath: "/tmp/msg",
      terminationMessagePolicy: "FallbackToLogsOnError",
    });
  });
  await t.step("malformed ports are dropped and reported", () => {
    for (
      const ports of [
        "{not json",
        '[{"containerPort":70000}]',
        '{"a":1}',
        '[{"containerPort":1,"protocol":"ICMP"}]',
      ]
    ) {
      const r = rejections();
      const pod = convert([sandbox()], [
        container({ annotations: { "io.kubernetes.container.ports": ports } }),
      ], { onReject: r.onReject });
      assert.equal((pod.spec?.containers as JsonObject[])[0]?.ports, undefined, ports);
      assert.deepEqual(r.reasons(), ["invalid_annotation"], ports);
    }
  });
});

Deno.test("convertPod() handles host-network pods and dual-stack IPs", async (t) => {
  await t.step("host network: spec.hostNetwork and the node IPs as pod IPs", () => {
    const pod = convert([sandbox({ hostNetwork: true })], [container()], {
      hostIPs: ["192.168.1.10", "fd00::10"],
    });
    assert.equal(pod.spec?.hostNetwork, true);
    assert.equal(pod.spec?.hostIPC, true);
    assert.deepEqual(status(pod).podIPs, [{ ip: "192.168.1.10" }, { ip: "fd00::10" }]);
    assert.equal(conditions(pod).PodReadyToStartContainers?.status, "True");
  });
  await t.step("pod IPs ordered by the node's family, one per family", () => {
    const ips = { ip: "10.88.0.5", additionalIps: ["fd00::5", "10.88.0.6", "fd00::6"] };
    const v4 = convert([sandbox(ips)], [], { hostIPs: ["192.168.1.10"] });
    assert.deepEqual(status(v4).podIPs, [{ ip: "10.88.0.5" }, { ip: "fd00::5" }]);
    const v6 = convert([sandbox(ips)], [], { hostIPs: ["fd00::10"] });
    assert.deepEqual(status(v6).podIPs, [{ ip: "fd00::5" }, { ip: "10.88.0.5" }]);
  });
  await t.step("a pod network sandbox without an IP is not ready to start containers", () => {
    const pod = convert([sandbox({ ip: "" })], []);
    assert.equal(conditions(pod).PodReadyToStartContainers?.status, "False");
  });
});

Deno.test("convertPod() separates init and ephemeral containers", async (t) => {
  await t.step("completed init container, running app", () => {
    const pod = convert([sandbox()], [
      container({
        name: "setup",
        type: "init",
        state: "exited",
        exitCode: 0,
        created: 1,
        finished: 3,
      }),
      container({ name: "app", created: 4, started: 5 }),
      container({ name: "debug", type: "ephemeral", created: 20 }),
    ]);
    assert.deepEqual(
      (pod.spec?.initContainers as JsonObject[]).map((c) => c.name),
      ["setup"],
    );
    assert.deepEqual((pod.spec?.containers as JsonObject[]).map((c) => c.name), ["app"]);
    assert.deepEqual(
      (pod.spec?.ephemeralContainers as JsonObject[]).map((c) => c.name),
      ["debug"],
    );
    assert.equal(statuses(pod, "initContainerStatuses")[0]?.ready, true);
    assert.equal(statuses(pod, "ephemeralContainerStatuses")[0]?.ready, false);
    assert.equal(status(pod).phase, "Running");
    assert.deepEqual(conditions(pod).Initialized, {
      type: "Initialized",
      status: "True",
      lastTransitionTime: at(3),
    });
  });
  await t.step("init container still running: Pending, not initialized", () => {
    const pod = convert([sandbox()], [container({ name: "setup", type: "init" })]);
    assert.equal(status(pod).phase, "Pending");
    assert.equal(conditions(pod).Initialized?.status, "False");
    assert.equal(conditions(pod).Initialized?.reason, "ContainersNotInitialized");
    assert.equal(
      conditions(pod).Initialized?.message,
      "containers with incomplete status: [setup]",
    );
    assert.equal(conditions(pod).ContainersReady?.reason, "UnknownContainerStatuses");
  });
});

Deno.test("convertPod() derives conditions like the kubelet's generators", async (t) => {
  await t.step("unready containers are named, Go-style", () => {
    const pod = convert([sandbox()], [
      container({ name: "b", state: "created", created: 7 }),
      container({ name: "a", state: "exited", exitCode: 1, created: 1, finished: 9 }),
      container({ name: "c", state: "running" }),
    ]);
    const ready = conditions(pod).Ready;
    assert.deepEqual(ready, {
      type: "Ready",
      status: "False",
      lastTransitionTime: at(9),
      reason: "ContainersNotReady",
      message: "containers with unready status: [a b]",
    });
    assert.deepEqual(conditions(pod).ContainersReady, { ...ready, type: "ContainersReady" });
    assert.equal(status(pod).phase, "Pending");
  });
  await t.step("conditions come in the kubelet's order", () => {
    const pod = convert([sandbox()], [container()]);
    assert.deepEqual(
      (status(pod).conditions as JsonObject[]).map((c) => c.type),
      ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"],
    );
  });
  await t.step("a sandbox without containers yet is Pending with unknown statuses", () => {
    const pod = convert([sandbox()], []);
    assert.equal(status(pod).phase, "Pending");
    assert.deepEqual((pod.spec as JsonObject).containers, []);
    assert.equal(conditions(pod).Ready?.reason, "UnknownContainerStatuses");
  });
});

Deno.test("convertPod() writes times in RFC 3339 with second precision", () => {
  const sb = sandbox({ createdAtNs: T0 * 1e9 + 999_000_000 });
  const pod = convert([sb], []);
  assert.equal(status(pod).startTime, at(0));
});

Deno.test("convertPod() sanitizes hostile runtime data", async (t) => {
  await t.step("invalid UTF-8 in the pod name rejects the pod", () => {
    const r = rejections();
    const pod = convertPod([sandbox({ name: "we\ufffdb" })], [], { onReject: r.onReject });
    assert.equal(pod, undefined);
    assert.deepEqual(r.reasons(), ["invalid_identity"]);
  });
  await t.step("a missing UID rejects the pod", () => {
    const r = rejections();
    const sb = sandbox();
    const broken: SandboxInput = {
      sandbox: {
        ...sb.sandbox,
        metadata: { ...sb.sandbox.metadata!, uid: "" },
        labels: { app: "x" },
      },
    };
    assert.equal(convertPod([broken], [], { onReject: r.onReject }), undefined);
    assert.deepEqual(r.reasons(), ["invalid_identity"]);
  });
  await t.step("bad label entries are dropped, good ones kept", () => {
    const r = rejections();
    const pod = convert(
      [sandbox({ labels: { good: "yes", "bad\ufffd": "x", lone: "\ud800", "": "empty" } })],
      [],
      { onReject: r.onReject },
    );
    assert.deepEqual(pod.metadata.labels, { good: "yes" });
    assert.deepEqual(r.reasons(), ["invalid_label", "invalid_label", "invalid_label"]);
  });
  await t.step("a huge annotation map is dropped whole", () => {
    const r = rejections();
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 5000; i++) annotations[`k${i}`] = "v";
    const pod = convert([sandbox({ annotations })], [], { onReject: r.onReject });
    assert.equal(pod.metadata.annotations, undefined);
    assert.deepEqual(r.reasons(), ["oversized_map"]);
    const r2 = rejections();
    const big = convert([sandbox({ annotations: { blob: "x".repeat(300_000) } })], [], {
      onReject: r2.onReject,
    });
    assert.equal(big.metadata.annotations, undefined);
    assert.deepEqual(r2.reasons(), ["oversized_map"]);
  });
  await t.step("absurd timestamps are left out and reported", () => {
    for (const createdAtNs of [-5, 3e20, Number.NaN]) {
      const r = rejections();
      const pod = convert([sandbox({ createdAtNs })], [], { onReject: r.onReject });
      assert.equal(status(pod).startTime, undefined);
      assert.equal(pod.metadata.creationTimestamp, undefined);
      assert.ok(r.reasons().length <= 1);
    }
    const r = rejections();
    const c = container({ state: "running" });
    const pod = convert([sandbox()], [{ ...c, status: { ...c.status!, startedAt: -1 } }], {
      onReject: r.onReject,
    });
    assert.deepEqual(statuses(pod)[0]?.state, { running: {} });
    assert.deepEqual(r.reasons(), ["invalid_timestamp"]);
  });
  await t.step("invalid pod IPs are dropped", () => {
    const r = rejections();
    const pod = convert([sandbox({ ip: "10.88.0.300", additionalIps: ["fd00::1", "nope"] })], [], {
      onReject: r.onReject,
    });
    assert.deepEqual(status(pod).podIPs, [{ ip: "fd00::1" }]);
    assert.deepEqual(r.reasons(), ["invalid_ip", "invalid_ip"]);
  });
  await t.step("messages are cut and made well-formed", () => {
    const pod = convert([sandbox()], [
      container({ state: "exited", exitCode: 1, message: "a\ud800" + "x".repeat(10_000) }),
    ]);
    const terminated = (statuses(pod)[0]?.state as { terminated: JsonObject }).terminated;
    const message = terminated.message as string;
    assert.equal(message.length, 4096);
    assert.ok(message.isWellFormed());
  });
  await t.step("a container without a valid name is skipped, the pod kept", () => {
    const r = rejections();
    const pod = convert([sandbox()], [container({ name: "bad\u0000name" }), container()], {
      onReject: r.onReject,
    });
    assert.deepEqual(statuses(pod).map((s) => s.name), ["app"]);
    assert.deepEqual(r.reasons(), ["invalid_identity"]);
  });
  await t.step("an unknown container state is reported and shown as unknown", () => {
    const r = rejections();
    const pod = convert([sandbox()], [container({ state: 42 })], { onReject: r.onReject });
    assert.deepEqual(statuses(pod)[0]?.state, { waiting: { reason: "ContainerStatusUnknown" } });
    assert.deepEqual(r.reasons(), ["invalid_status"]);
  });
});
