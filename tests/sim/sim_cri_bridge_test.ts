import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject, PodSnapshot } from "../../src/model/pod.ts";
import { SimCriRuntime } from "../../src/sim/runtime/cri_runtime.ts";
import { type CriServer, startCriServer } from "../../src/sim/runtime/cri_server.ts";
import { FakeClock } from "../../src/clock.ts";
import { SimCriBridge, startSimulatedRuntime } from "../../src/sim/runtime/sim_cri_bridge.ts";
import { SimulatedNode } from "../../src/sim/node/simulated_node.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { poll } from "../_support/poll.ts";

/** A node, its bridge into a runtime served on a temporary socket, a CRI client and source. */
class Harness implements AsyncDisposable {
  readonly clock = new FakeClock(Date.UTC(2025, 0, 1));
  readonly node: SimulatedNode;
  readonly runtime: SimCriRuntime;
  readonly bridge: SimCriBridge;
  readonly client: CriClient;
  readonly source: CriPodSource;
  server!: CriServer;
  readonly #dir: string;

  private constructor(dir: string, options: { seed: number; pods: number; churn: number }) {
    this.#dir = dir;
    this.node = new SimulatedNode({
      clock: this.clock,
      seed: options.seed,
      pods: options.pods,
      churnPerSecond: options.churn,
    });
    this.runtime = new SimCriRuntime({ clock: this.clock, runtimeName: "containerd" });
    this.bridge = new SimCriBridge({ node: this.node, runtime: this.runtime });
    this.client = new CriClient(`unix://${dir}/cri.sock`, { requestTimeoutMs: 5000 });
    this.source = new CriPodSource({
      runtime: this.client,
      nodeName: this.node.nodeName,
      hostIPs: [this.node.hostIP],
      callTimeoutMs: 5000,
    });
  }

  static async start(options: { seed: number; pods: number; churn: number }): Promise<Harness> {
    const h = new Harness(await Deno.makeTempDir({ prefix: "sim-bridge-" }), options);
    h.server = await startCriServer(h.runtime, { socketPath: `${h.#dir}/cri.sock` });
    return h;
  }

  list(): Promise<readonly PodSnapshot[]> {
    return this.source.list(AbortSignal.timeout(10_000));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.client.close();
    await this.server.close();
    await Deno.remove(this.#dir, { recursive: true });
  }
}

/** Runtime methods that change something. */
const MUTATING = [
  "runPodSandbox",
  "stopPodSandbox",
  "removePodSandbox",
  "createContainer",
  "startContainer",
  "stopContainer",
  "removeContainer",
] as const;

function mutatingCalls(runtime: SimCriRuntime): number {
  return MUTATING.reduce((sum, m) => sum + runtime.calls[m], 0);
}

function objects(value: unknown): JsonObject[] {
  return Array.isArray(value) ? value as JsonObject[] : [];
}

function byName(items: unknown): Map<string, JsonObject> {
  return new Map(objects(items).map((c) => [c.name as string, c]));
}

function sub(value: unknown, key: string): JsonObject | undefined {
  const o = (value ?? {}) as JsonObject;
  return o[key] as JsonObject | undefined;
}

function stateKind(status: JsonObject): string {
  return Object.keys((status.state ?? {}) as JsonObject)[0] ?? "none";
}

/** The metadata a pod had when the bridge first gave it a sandbox. */
interface FirstSeen {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
}

/**
 * Compares one container status: the CRI view is the kubelet's rebuild, so a
 * container backing off (Waiting CrashLoopBackOff, which only the kubelet
 * knows) shows its dead instance as Terminated.
 */
function compareContainer(where: string, sim: JsonObject, cri: JsonObject | undefined): string[] {
  if (cri === undefined) return [`${where}: missing in CRI`];
  const out: string[] = [];
  const expect = (what: string, a: unknown, b: unknown) => {
    if (a !== b) out.push(`${where} ${what}: sim ${JSON.stringify(a)} cri ${JSON.stringify(b)}`);
  };
  expect("image", sim.image, cri.image);
  expect("restartCount", sim.restartCount, cri.restartCount);
  const simState = sub(sim, "state")!;
  const simLast = sub(sub(sim, "lastState"), "terminated");
  const criState = sub(cri, "state")!;
  if (sub(simState, "waiting")?.reason === "CrashLoopBackOff") {
    const t = sub(criState, "terminated");
    expect("backoff state", "terminated", stateKind(cri));
    expect("backoff exitCode", simLast?.exitCode, t?.exitCode);
    expect("backoff reason", simLast?.reason, t?.reason);
    expect("backoff finishedAt", simLast?.finishedAt, t?.finishedAt);
    return out;
  }
  expect("state", stateKind(sim), stateKind(cri));
  const running = sub(simState, "running");
  if (running !== undefined) {
    expect("startedAt", running.startedAt, sub(criState, "running")?.startedAt);
  }
  const terminated = sub(simState, "terminated");
  if (terminated !== undefined) {
    const t = sub(criState, "terminated");
    for (const key of ["exitCode", "reason", "startedAt", "finishedAt"]) {
      expect(key, terminated[key], t?.[key]);
    }
  }
  if (simLast !== undefined && (running !== undefined || terminated !== undefined)) {
    const t = sub(sub(cri, "lastState"), "terminated");
    for (const key of ["exitCode", "reason", "finishedAt"]) {
      expect(`lastState.${key}`, simLast[key], t?.[key]);
    }
  }
  return out;
}

function sorted(map: Record<string, string> | undefined): [string, string][] {
  return Object.entries(map ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

function comparePod(
  sim: PodObject,
  cri: PodObject,
  first: FirstSeen,
  hostIP: string,
): string[] {
  const where = `${sim.metadata.namespace}/${sim.metadata.name}`;
  const out: string[] = [];
  const expect = (what: string, a: unknown, b: unknown) => {
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(`${where} ${what}: sim ${JSON.stringify(a)} cri ${JSON.stringify(b)}`);
    }
  };
  expect("name", sim.metadata.name, cri.metadata.name);
  expect("namespace", sim.metadata.namespace, cri.metadata.namespace);
  // Protobuf maps carry no order: compare as sorted entries.
  expect("labels", sorted(first.labels), sorted(cri.metadata.labels));
  expect("annotations", sorted(first.annotations), sorted(cri.metadata.annotations));
  expect("creationTimestamp", sim.metadata.creationTimestamp, cri.metadata.creationTimestamp);
  const spec = sim.spec!;
  const status = sim.status!;
  const terminal = status.phase === "Succeeded" || status.phase === "Failed";
  const expectedIp = terminal ? undefined : spec.hostNetwork === true ? hostIP : status.podIP;
  expect("podIP", expectedIp, cri.status?.podIP);
  if (spec.restartPolicy === "Always") expect("phase", status.phase, cri.status?.phase);
  const images = (list: unknown) =>
    objects(list).map((c) => `${c.name as string}=${c.image as string}`);
  expect("containers", images(spec.containers).sort(), images(cri.spec?.containers));
  expect("initContainers", images(spec.initContainers), images(cri.spec?.initContainers));
  for (const key of ["containerStatuses", "initContainerStatuses"]) {
    const criStatuses = byName(cri.status?.[key]);
    expect(`${key} names`, [...byName(status[key]).keys()].sort(), [...criStatuses.keys()].sort());
    for (const [name, s] of byName(status[key])) {
      out.push(...compareContainer(`${where} ${key}[${name}]`, s, criStatuses.get(name)));
    }
  }
  return out;
}

Deno.test("SimCriBridge.sync() mirrors a churning SimulatedNode through a CRI server", async () => {
  await using h = await Harness.start({ seed: 11, pods: 50, churn: 1 });
  const firstSeen = new Map<string, FirstSeen>();
  const seenReasons = new Set<string>();
  const seenStates = new Set<string>();
  let relabeled = 0;
  const steps = [0, 5_000, 30_000, 60_000, 120_000, 300_000, 1_000, 600_000];
  for (const [i, stepMs] of steps.entries()) {
    h.clock.advance(stepMs);
    await h.bridge.sync(h.clock.now());
    const simPods = h.node.pods();
    for (const pod of simPods) {
      if (!firstSeen.has(pod.metadata.uid)) {
        firstSeen.set(pod.metadata.uid, {
          labels: { ...pod.metadata.labels },
          annotations: { ...pod.metadata.annotations },
        });
      }
    }
    const criPods = new Map((await h.list()).map((s) => [s.uid, s.pod]));
    assert.deepEqual(
      [...criPods.keys()].sort(),
      simPods.map((p) => p.metadata.uid).sort(),
      `step ${i}: same pod UIDs`,
    );
    const problems: string[] = [];
    for (const sim of simPods) {
      const uid = sim.metadata.uid;
      const cri = criPods.get(uid)!;
      problems.push(...comparePod(sim, cri, firstSeen.get(uid)!, h.node.hostIP));
      if (
        JSON.stringify(sim.metadata.labels ?? {}) !== JSON.stringify(firstSeen.get(uid)!.labels)
      ) {
        relabeled++;
      }
      for (const c of objects(cri.status?.containerStatuses)) {
        seenStates.add(stateKind(c));
        const t = sub(sub(c, "state"), "terminated") ?? sub(sub(c, "lastState"), "terminated");
        if (t?.reason !== undefined) seenReasons.add(t.reason as string);
      }
    }
    assert.deepEqual(problems, [], `step ${i}`);
  }
  assert.equal(h.runtime.sandboxCount, h.node.pods().length, "removed pods left no sandbox");
  const specContainers = h.node.pods().reduce(
    (n, p) => n + objects(p.spec?.containers).length + objects(p.spec?.initContainers).length,
    0,
  );
  assert.ok(h.runtime.containerCount <= 2 * specContainers, "at most two instances per container");
  const counts = h.node.mutationCounts();
  for (const kind of ["create", "start", "restart", "crashLoop", "finish", "delete"] as const) {
    assert.ok(counts[kind] > 0, `the churn included ${kind}`);
  }
  assert.deepEqual([...seenStates].sort(), ["running", "terminated", "waiting"]);
  for (const reason of ["Completed", "Error", "OOMKilled"]) {
    assert.ok(seenReasons.has(reason), `saw ${reason}`);
  }
  assert.ok(relabeled > 0, "relabels happened (and are not mirrored)");
});

Deno.test("SimCriBridge.sync() changes nothing in the runtime when the node did not change", async () => {
  await using h = await Harness.start({ seed: 5, pods: 50, churn: 1 });
  await h.bridge.sync(h.clock.now());
  const before = new Map((await h.list()).map((s) => [s.uid, s]));

  h.runtime.resetCalls();
  const result = await h.bridge.sync(h.clock.now());
  assert.deepEqual(result, { mutations: 0, added: 0, changed: 0, removed: 0, failed: 0 });
  assert.equal(mutatingCalls(h.runtime), 0);
  const after = await h.list();
  assert.equal(after.length, before.size);
  for (const s of after) assert.equal(s, before.get(s.uid), "the same snapshot object");

  // A relabel changes the pod object but nothing the runtime holds: the kubelet
  // never updates a sandbox's labels either.
  let relabels = 0;
  for (let i = 0; i < 200 && relabels === 0; i++) {
    const counts = h.node.mutationCounts();
    h.clock.advance(1000);
    h.runtime.resetCalls();
    const step = await h.bridge.sync(h.clock.now());
    const now = h.node.mutationCounts();
    if (step.mutations === 1 && now.relabel === counts.relabel + 1) {
      relabels++;
      assert.equal(step.changed, 0);
      assert.equal(mutatingCalls(h.runtime), 0);
    }
  }
  assert.equal(relabels, 1, "a relabel-only step happened");
});

Deno.test("SimCriBridge.sync() removes the sandboxes of deleted pods", async () => {
  await using h = await Harness.start({ seed: 9, pods: 20, churn: 2 });
  await h.bridge.sync(h.clock.now());
  const first = new Set(h.node.pods().map((p) => p.metadata.uid));
  h.clock.advance(600_000);
  const result = await h.bridge.sync(h.clock.now());
  const now = new Set(h.node.pods().map((p) => p.metadata.uid));
  const gone = [...first].filter((uid) => !now.has(uid));
  assert.ok(gone.length > 0);
  assert.equal(result.removed, gone.length);
  for (const uid of gone) assert.equal(h.bridge.sandboxId(uid), undefined);
  const listed = new Set((await h.list()).map((s) => s.uid));
  for (const uid of gone) assert.ok(!listed.has(uid), `${uid} is not listed`);
  assert.equal(h.runtime.sandboxCount, now.size);
});

Deno.test("SimCriBridge.sync() runs the static pod under its config hash, as the kubelet does", async () => {
  await using h = await Harness.start({ seed: 3, pods: 20, churn: 1 });
  await h.bridge.sync(h.clock.now());
  const staticPod = h.node.pods().find((p) =>
    p.metadata.annotations?.["kubernetes.io/config.source"] === "file"
  )!;
  const hash = staticPod.metadata.annotations?.["kubernetes.io/config.hash"];
  assert.equal(staticPod.metadata.uid, hash);
  // The sandbox's UID is the one a mirror pod's `kubernetes.io/config.mirror`
  // names: the runtime's view of the pod and the API server's meet on it.
  const { items } = await h.client.listPodSandbox({});
  const sandbox = items.find((s) => s.metadata?.name === staticPod.metadata.name)!;
  assert.equal(sandbox.metadata?.uid, hash);
  const listed = (await h.list()).find((s) => s.pod.metadata.name === staticPod.metadata.name)!;
  assert.equal(listed.uid, hash);
  assert.equal(listed.pod.metadata.annotations?.["kubernetes.io/config.mirror"], hash);
});

Deno.test("SimCriBridge.sync() retries the pods whose runtime calls failed", async () => {
  await using h = await Harness.start({ seed: 3, pods: 30, churn: 1 });
  await h.bridge.sync(h.clock.now());
  h.clock.advance(120_000);
  h.runtime.down = true;
  const failedSync = await h.bridge.sync(h.clock.now());
  assert.ok(failedSync.failed > 0);
  h.runtime.down = false;
  const retry = await h.bridge.sync(h.clock.now());
  assert.equal(retry.failed, 0);
  assert.equal(retry.mutations, 0, "no new node change: only the retry");
  assert.ok(retry.added + retry.changed + retry.removed > 0);
  const listed = (await h.list()).map((s) => s.uid).sort();
  assert.deepEqual(listed, h.node.pods().map((p) => p.metadata.uid).sort());
  assert.equal(h.runtime.sandboxCount, h.node.pods().length);
});

Deno.test("startSimulatedRuntime() syncs on a timer and stops on abort", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sim-runtime-" });
  const socketPath = `${dir}/cri.sock`;
  const clock = new FakeClock(Date.UTC(2025, 0, 1));
  const node = new SimulatedNode({ clock, pods: 30, seed: 4, churnPerSecond: 1 });
  const controller = new AbortController();
  const sim = await startSimulatedRuntime({
    node,
    socketPath,
    syncPeriodMs: 5,
    signal: controller.signal,
  });
  const client = new CriClient(sim.endpoint, { requestTimeoutMs: 5000 });
  try {
    const source = new CriPodSource({ runtime: client, nodeName: node.nodeName });
    const uids = (pods: readonly { uid: string }[]) => pods.map((p) => p.uid).sort().join();
    const simUids = () => uids(node.pods().map((p) => ({ uid: p.metadata.uid })));
    const first = await source.list(AbortSignal.timeout(5000));
    assert.equal(uids(first), simUids(), "first list");
    // The source asks the runtime's Version: simulated containers read as such.
    const ids = first.flatMap((s) =>
      ((s.pod.status?.containerStatuses ?? []) as { containerID?: string }[])
        .flatMap((c) => c.containerID ?? [])
    );
    assert.ok(ids.length > 0, "containers listed");
    for (const id of ids) assert.match(id, /^pods-api-simulated:\/\/[0-9a-f]+$/);

    const before = node.mutations;
    clock.advance(300_000);
    await poll(async () => {
      const listed = uids(await source.list(AbortSignal.timeout(5000)));
      return node.mutations > before && listed === simUids() ? true : undefined;
    });
    assert.equal((await client.version({ version: "v1" })).runtimeName, "pods-api-simulated");
  } finally {
    client.close();
    controller.abort();
    await sim.close();
  }
  await assert.rejects(Deno.lstat(socketPath), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});
