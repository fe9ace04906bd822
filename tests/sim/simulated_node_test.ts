import assert from "node:assert/strict";
import type { PodObject } from "../../src/model/pod.ts";
import { FakeClock } from "../../src/clock.ts";
import {
  MUTATION_KINDS,
  SimulatedNode,
  type SimulatedNodeOptions,
} from "../../src/sim/node/simulated_node.ts";
import { podProblems } from "./_pod_validity.ts";

const START = Date.UTC(2025, 4, 1, 12, 0, 0);

function makeNode(
  options: Partial<SimulatedNodeOptions> = {},
): { node: SimulatedNode; clock: FakeClock } {
  const clock = new FakeClock(START);
  const node = new SimulatedNode({ clock, pods: 40, churnPerSecond: 5, seed: 7, ...options });
  return { node, clock };
}

function validate(node: SimulatedNode, pods: readonly PodObject[]): void {
  const problems = pods.flatMap((p) =>
    podProblems(p, { nodeName: node.nodeName, hostIP: node.hostIP })
  );
  assert.deepEqual(problems, []);
}

function phaseOf(pod: PodObject): string {
  return String(pod.status?.phase);
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen);
}

function ownerKind(pod: PodObject): string {
  const refs = (pod.metadata.ownerReferences ?? []) as { kind: string }[];
  return refs[0]?.kind ?? "none";
}

Deno.test("SimulatedNode() builds the same pods for the same seed", () => {
  const a = makeNode().node;
  const b = makeNode().node;
  const c = makeNode({ seed: 8 }).node;
  assert.deepEqual(a.pods(), b.pods());
  assert.notDeepEqual(a.pods(), c.pods());
});

Deno.test("SimulatedNode() generates valid, unique, realistic pods", () => {
  const { node } = makeNode({ pods: 300 });
  const pods = node.pods();
  assert.equal(pods.length, 300);
  validate(node, pods);
  assert.equal(new Set(pods.map((p) => p.metadata.uid)).size, pods.length);
  const names = pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  assert.equal(new Set(names).size, pods.length);
  const ips = pods.filter((p) => p.spec?.hostNetwork !== true && p.status?.podIP)
    .map((p) => p.status!.podIP);
  assert.equal(new Set(ips).size, ips.length);
  const owners = new Set(pods.map(ownerKind));
  assert.deepEqual([...owners].sort(), ["DaemonSet", "Job", "Node", "ReplicaSet"]);
  const phases = new Set(pods.map(phaseOf));
  for (const phase of ["Pending", "Running", "Succeeded"]) assert.ok(phases.has(phase), phase);
  const staticPod = pods.find((p) => ownerKind(p) === "Node")!;
  assert.equal(staticPod.metadata.name, `nginx-proxy-${node.nodeName}`);
  assert.equal(staticPod.metadata.annotations?.["kubernetes.io/config.source"], "file");
  const deploymentPod = pods.find((p) => ownerKind(p) === "ReplicaSet")!;
  assert.match(deploymentPod.metadata.name, /^[a-z-]+-[b-z2-9]{9,10}-[b-z2-9]{5}$/);
  const namespaces = new Set(pods.map((p) => p.metadata.namespace));
  assert.ok(namespaces.has("payments") && namespaces.has("kube-system"));
});

Deno.test("SimulatedNode() gives its static pod the kubelet's UID: its config hash", () => {
  const { node, clock } = makeNode({ pods: 40, churnPerSecond: 20 });
  const staticPod = () => node.pods().find((p) => ownerKind(p) === "Node")!;
  const first = staticPod();
  const annotations = first.metadata.annotations ?? {};
  assert.match(first.metadata.uid, /^[0-9a-f]{32}$/);
  assert.equal(annotations["kubernetes.io/config.hash"], first.metadata.uid);
  // The mirror pod in the API server carries the same value, which the API
  // server source keys it by, so it merges with this pod.
  assert.equal(annotations["kubernetes.io/config.mirror"], first.metadata.uid);
  clock.advance(600_000);
  node.advanceTo(clock.now());
  assert.equal(staticPod().metadata.uid, first.metadata.uid, "the same manifest, the same UID");
  const other = makeNode({ pods: 40, seed: 8 }).node.pods().find((p) => ownerKind(p) === "Node")!;
  assert.notEqual(other.metadata.uid, first.metadata.uid, "another seed, another manifest");
});

Deno.test("SimulatedNode() places pods only in the namespaces it is given", () => {
  const { node } = makeNode({ pods: 80, namespaces: ["team-a", "kube-system"] });
  const namespaces = new Set(node.pods().map((p) => p.metadata.namespace));
  assert.deepEqual([...namespaces].sort(), ["kube-system", "team-a"]);
  validate(node, node.pods());
});

Deno.test("SimulatedNode.pods() returns deeply frozen pods and reuses the array", () => {
  const { node, clock } = makeNode({ pods: 20 });
  const first = node.pods();
  assert.equal(node.pods(), first);
  assert.ok(isDeepFrozen(first));
  clock.advance(10_000);
  node.advanceTo(clock.now());
  assert.notEqual(node.pods(), first);
  assert.ok(isDeepFrozen(node.pods()));
});

Deno.test("SimulatedNode.advanceTo() gives the same pods however time is split", () => {
  const one = makeNode();
  one.clock.advance(120_000);
  one.node.advanceTo(one.clock.now());
  const many = makeNode();
  const steps = [1, 999, 1000, 250, 40_000, 3, 17_747];
  while (many.clock.now() < START + 120_000) {
    const step = steps[(many.clock.now() / 7) % steps.length | 0]!;
    many.clock.set(Math.min(START + 120_000, many.clock.now() + step));
    many.node.advanceTo(many.clock.now());
  }
  assert.equal(many.node.mutations, one.node.mutations);
  assert.deepEqual(many.node.mutationCounts(), one.node.mutationCounts());
  assert.deepEqual(many.node.pods(), one.node.pods());
});

Deno.test("SimulatedNode.advanceTo() applies churnPerSecond mutations per second of clock time", async (t) => {
  const cases = [
    { churnPerSecond: 7.5, expected: 450 },
    { churnPerSecond: 1, expected: 60 },
    { churnPerSecond: 0.25, expected: 15 },
    { churnPerSecond: 0, expected: 0 },
  ];
  for (const c of cases) {
    await t.step(`${c.churnPerSecond}/s over a minute`, () => {
      const { node, clock } = makeNode({ churnPerSecond: c.churnPerSecond });
      let applied = 0;
      for (let i = 0; i < 240; i++) {
        clock.advance(250);
        applied += node.advanceTo(clock.now());
      }
      assert.equal(node.mutations, c.expected);
      assert.equal(applied, c.expected);
      const counts = node.mutationCounts();
      assert.equal(MUTATION_KINDS.reduce((sum, k) => sum + counts[k], 0), c.expected);
    });
  }
});

Deno.test("SimulatedNode.advanceTo() changes exactly one pod per mutation and keeps the others identical", () => {
  const { node, clock } = makeNode({ churnPerSecond: 1 });
  let prev = new Map(node.pods().map((p) => [p.metadata.uid, p]));
  for (let i = 0; i < 500; i++) {
    clock.advance(1000);
    assert.equal(node.advanceTo(clock.now()), 1);
    const next = new Map(node.pods().map((p) => [p.metadata.uid, p]));
    const added = [...next.keys()].filter((uid) => !prev.has(uid));
    const removed = [...prev.keys()].filter((uid) => !next.has(uid));
    const changed = [...next.keys()].filter((uid) =>
      prev.has(uid) && prev.get(uid) !== next.get(uid)
    );
    assert.equal(added.length + removed.length + changed.length, 1, `step ${i}`);
    for (const uid of changed) {
      const before = prev.get(uid)!;
      const after = next.get(uid)!;
      assert.notDeepEqual(after, before, "a new object must mean new content");
      assert.equal(after.spec, before.spec, "the spec is shared, not copied");
      if (JSON.stringify(after.metadata) === JSON.stringify(before.metadata)) {
        assert.equal(after.metadata, before.metadata, "unchanged metadata is shared");
      } else {
        assert.equal(after.status, before.status, "a label change shares the status");
      }
    }
    prev = next;
  }
});

Deno.test("SimulatedNode.advanceTo() keeps pods valid and watch invariants over a long seeded run", async (t) => {
  for (const seed of [1, 2, 3]) {
    await t.step(`seed ${seed}`, () => {
      const { node, clock } = makeNode({ seed, pods: 60, churnPerSecond: 20 });
      const seen = new Map<string, PodObject>();
      const gone = new Set<string>();
      validate(node, node.pods());
      for (const p of node.pods()) seen.set(p.metadata.uid, p);
      for (let step = 0; step < 1500; step++) {
        clock.advance(500);
        node.advanceTo(clock.now());
        const pods = node.pods();
        const current = new Set<string>();
        const ips = new Set<string>();
        const fresh: PodObject[] = [];
        for (const pod of pods) {
          const uid = pod.metadata.uid;
          current.add(uid);
          assert.ok(!gone.has(uid), `UID ${uid} came back after deletion`);
          if (pod.spec?.hostNetwork !== true && pod.status?.podIP) {
            const ip = String(pod.status.podIP);
            assert.ok(!ips.has(ip), `pod IP ${ip} used twice`);
            ips.add(ip);
          }
          const before = seen.get(uid);
          if (before === pod) continue;
          fresh.push(pod);
          if (before) {
            const from = phaseOf(before);
            const to = phaseOf(pod);
            assert.ok(!(from === "Running" && to === "Pending"), `${uid} went Running -> Pending`);
            if (from === "Succeeded" || from === "Failed") assert.equal(to, from);
            assert.equal(pod.metadata.creationTimestamp, before.metadata.creationTimestamp);
            const restarts = new Map(
              ((before.status?.containerStatuses ?? []) as { name: string; restartCount: number }[])
                .map((c) => [c.name, c.restartCount]),
            );
            for (
              const c of (pod.status?.containerStatuses ?? []) as {
                name: string;
                restartCount: number;
              }[]
            ) {
              assert.ok(c.restartCount >= restarts.get(c.name)!, "restartCount went down");
            }
          }
          seen.set(uid, pod);
        }
        for (const uid of seen.keys()) {
          if (!current.has(uid)) {
            gone.add(uid);
            seen.delete(uid);
          }
        }
        validate(node, fresh);
      }
      assert.equal(node.mutations, 1500 * 10);
      for (const kind of MUTATION_KINDS) assert.ok(node.mutationCounts()[kind] > 0, kind);
    });
  }
});

Deno.test("SimulatedNode.advanceTo() keeps the pod count near its target", () => {
  const { node, clock } = makeNode({ pods: 100, churnPerSecond: 50 });
  let sum = 0;
  const steps = 600;
  for (let i = 0; i < steps; i++) {
    clock.advance(1000);
    node.advanceTo(clock.now());
    const n = node.pods().length;
    assert.ok(n >= 85 && n <= 115, `count ${n} at step ${i}`);
    sum += n;
  }
  const mean = sum / steps;
  assert.ok(Math.abs(mean - 100) <= 5, `mean ${mean}`);
});

Deno.test("SimulatedNode.advanceTo() does not keep crash-looping pods piling up", () => {
  const { node, clock } = makeNode({ pods: 50, churnPerSecond: 20 });
  let worst = 0;
  for (let i = 0; i < 300; i++) {
    clock.advance(1000);
    node.advanceTo(clock.now());
    const looping = node.pods().filter((p) =>
      ((p.status?.containerStatuses ?? []) as { state: { waiting?: { reason: string } } }[])
        .some((c) =>
          c.state.waiting?.reason === "CrashLoopBackOff"
        )
    ).length;
    worst = Math.max(worst, looping);
  }
  assert.ok(worst <= 10, `up to ${worst} of 50 pods crash looping`);
});

Deno.test("SimulatedNode.advanceTo() ignores a clock that goes backwards", () => {
  const { node, clock } = makeNode();
  clock.advance(10_000);
  node.advanceTo(clock.now());
  const pods = node.pods();
  const mutations = node.mutations;
  assert.equal(node.advanceTo(clock.now() - 5_000), 0);
  assert.equal(node.advanceTo(clock.now()), 0);
  assert.equal(node.pods(), pods);
  assert.equal(node.mutations, mutations);
});

Deno.test("SimulatedNode.advanceTo() skips a backlog beyond maxMutationsPerAdvance", () => {
  const { node, clock } = makeNode({ churnPerSecond: 10, maxMutationsPerAdvance: 100 });
  clock.advance(60_000);
  assert.equal(node.advanceTo(clock.now()), 100);
  assert.equal(node.mutations, 100);
  assert.equal(node.skippedMutations, 500);
  clock.advance(1_000);
  assert.equal(node.advanceTo(clock.now()), 10);
});

Deno.test("SimulatedNode.advanceTo() rejects a non-finite time", () => {
  const { node } = makeNode();
  assert.throws(() => node.advanceTo(Number.NaN), TypeError);
});

Deno.test("SimulatedNode() supports zero pods", () => {
  const { node, clock } = makeNode({ pods: 0, churnPerSecond: 2 });
  assert.equal(node.pods().length, 0);
  clock.advance(30_000);
  node.advanceTo(clock.now());
  assert.ok(node.pods().length <= 5);
  validate(node, node.pods());
});

Deno.test("SimulatedNode() rejects invalid options", async (t) => {
  const cases: { name: string; options: Partial<SimulatedNodeOptions>; error: ErrorConstructor }[] =
    [
      { name: "negative pod count", options: { pods: -1 }, error: RangeError },
      { name: "fractional pod count", options: { pods: 1.5 }, error: RangeError },
      { name: "negative churn", options: { churnPerSecond: -1 }, error: RangeError },
      { name: "infinite churn", options: { churnPerSecond: Infinity }, error: RangeError },
      { name: "NaN seed", options: { seed: Number.NaN }, error: RangeError },
      { name: "empty namespaces", options: { namespaces: [] }, error: RangeError },
      { name: "bad namespace", options: { namespaces: ["Bad_NS"] }, error: TypeError },
      { name: "duplicate namespace", options: { namespaces: ["a", "a"] }, error: TypeError },
      { name: "bad node name", options: { nodeName: "Node_1" }, error: TypeError },
      { name: "bad host IP", options: { hostIP: "10.0.0.300" }, error: TypeError },
      { name: "zero max per advance", options: { maxMutationsPerAdvance: 0 }, error: RangeError },
    ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(() => makeNode(c.options), c.error);
    });
  }
});
