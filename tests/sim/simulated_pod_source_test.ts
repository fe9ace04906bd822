import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { SimulatedNode } from "../../src/sim/node/simulated_node.ts";
import { SimulatedPodSource } from "../../src/sim/node/simulated_pod_source.ts";

function setup(churnPerSecond = 2): { source: SimulatedPodSource; clock: FakeClock } {
  const clock = new FakeClock(Date.UTC(2025, 4, 1));
  const node = new SimulatedNode({ clock, pods: 25, seed: 5, churnPerSecond });
  return { source: new SimulatedPodSource({ node }), clock };
}

function signal(): AbortSignal {
  return new AbortController().signal;
}

Deno.test("SimulatedPodSource.list() reports the node's pods keyed by UID", async () => {
  const { source } = setup();
  assert.equal(source.kind, "fake");
  const list = await source.list(signal());
  assert.equal(list.length, 25);
  for (const s of list) assert.equal(s.uid, s.pod.metadata.uid);
  assert.deepEqual(list.map((s) => s.pod), [...source.node.pods()]);
});

Deno.test("SimulatedPodSource.list() advances the node to the clock", async () => {
  const { source, clock } = setup(4);
  await source.list(signal());
  assert.equal(source.node.mutations, 0);
  clock.advance(10_000);
  await source.list(signal());
  assert.equal(source.node.mutations, 40);
});

Deno.test("SimulatedPodSource.list() reuses snapshots of unchanged pods", async () => {
  const { source, clock } = setup(1);
  const first = await source.list(signal());
  assert.equal(await source.list(signal()), first, "no time passed: the same list");
  clock.advance(1_000);
  const second = await source.list(signal());
  const before = new Map(first.map((s) => [s.uid, s]));
  const reused = second.filter((s) => before.get(s.uid) === s).length;
  assert.ok(reused >= second.length - 1, `only ${reused} of ${second.length} reused`);
  assert.ok(Object.isFrozen(second[0]));
});

Deno.test("SimulatedPodSource.list() rejects when the signal is aborted, without advancing", async () => {
  const { source, clock } = setup(4);
  const controller = new AbortController();
  controller.abort(new Error("shutdown"));
  clock.advance(10_000);
  await assert.rejects(source.list(controller.signal), /shutdown/);
  assert.equal(source.node.mutations, 0);
});

Deno.test("SimulatedPodSource() can read time from its own clock", async () => {
  const nodeClock = new FakeClock(Date.UTC(2025, 4, 1));
  const node = new SimulatedNode({ clock: nodeClock, pods: 10, churnPerSecond: 1 });
  const sourceClock = new FakeClock(Date.UTC(2025, 4, 1) + 5_000);
  const source = new SimulatedPodSource({ node, clock: sourceClock });
  await source.list(signal());
  assert.equal(node.mutations, 5);
});
