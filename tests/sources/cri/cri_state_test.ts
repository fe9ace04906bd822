// The CRI source's state, one event and one relist at a time, on what
// containerd 1.7.24 sends for a pod removed the kubelet's way (issue 37).
import assert from "node:assert/strict";
import { CriState, type ListWindow } from "../../../src/sources/cri/cri_state.ts";
import {
  CONTAINER_EVENT_TYPE,
  type ContainerEventResponse,
  POD_SANDBOX_STATE,
} from "../../../src/sources/cri/mod.ts";
import { RuntimeTruth } from "./_runtime_truth.ts";

const START_NS = 1e15;

function newState(): CriState {
  return new CriState({ nodeName: "node-1", runtimeName: "containerd" });
}

/** Relists `state` from `truth` as the source does: reads now, inspects what it must. */
function relist(state: CriState, truth: RuntimeTruth): ListWindow {
  const fromNs = truth.now;
  truth.now += 500;
  const read = truth.read();
  const plan = state.toInspect(read.sandboxes, read.containers);
  const window = { fromNs, toNs: truth.now += 500 };
  state.applyList({
    sandboxes: read.sandboxes,
    containers: read.containers,
    sandboxStatuses: new Map(plan.sandboxIds.map((id) => [id, read.sandboxStatuses.get(id)!])),
    containerStatuses: new Map(
      plan.containerIds.map((id) => [id, read.containerStatuses.get(id)!]),
    ),
  }, window);
  return window;
}

/** The pod's phase and its containers' states, as served. */
function served(state: CriState): string[] {
  return state.view().map((s) => {
    const status = s.pod.status as {
      phase?: string;
      containerStatuses?: { name: string; state: Record<string, unknown> }[];
    };
    const containers = (status.containerStatuses ?? []).map((c) =>
      `${c.name}=${Object.keys(c.state)[0]}`
    );
    return [s.uid, status.phase, ...containers].join(" ");
  });
}

/** The kubelet's steps on containerd 1.7, and what each sends. */
function lifecycle(truth: RuntimeTruth): ContainerEventResponse[][] {
  return [
    truth.runSandbox("sb1", "uid-1", "web"),
    truth.createContainer("app1", "sb1", "app", 0),
    truth.startContainer("app1"),
    truth.stopContainer("app1"),
    truth.stopSandbox("sb1"),
    truth.removeContainer("app1"),
    truth.removeSandbox("sb1"),
  ];
}

Deno.test("CriState sends the kubelet's lifecycle on containerd 1.7 through events, and its relist removes the pod", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  relist(state, truth);
  const steps = lifecycle(truth);
  const events = steps.flat();
  // The order and shape containerd 1.7.24 was seen to send.
  assert.deepEqual(
    events.map((e) => [
      e.containerEventType,
      e.containerId,
      e.podSandboxStatus?.state ?? "none",
      e.containersStatuses.length,
    ]),
    [
      [CONTAINER_EVENT_TYPE.created, "sb1", POD_SANDBOX_STATE.ready, 0],
      [CONTAINER_EVENT_TYPE.started, "sb1", POD_SANDBOX_STATE.ready, 0],
      [CONTAINER_EVENT_TYPE.created, "app1", POD_SANDBOX_STATE.ready, 1],
      [CONTAINER_EVENT_TYPE.started, "app1", POD_SANDBOX_STATE.ready, 1],
      [CONTAINER_EVENT_TYPE.stopped, "app1", POD_SANDBOX_STATE.ready, 1],
      [CONTAINER_EVENT_TYPE.stopped, "sb1", POD_SANDBOX_STATE.notReady, 1],
      [CONTAINER_EVENT_TYPE.deleted, "app1", POD_SANDBOX_STATE.notReady, 0],
      [CONTAINER_EVENT_TYPE.deleted, "sb1", "none", 0],
    ],
  );
  const seen: string[][] = [];
  const outcomes = events.map((e) => {
    const outcome = state.applyEvent(e);
    seen.push(served(state));
    return outcome;
  });
  assert.deepEqual(outcomes, [...Array(7).fill("applied"), "relist"]);
  assert.deepEqual(seen.map((v) => v.join()), [
    "uid-1 Pending",
    "uid-1 Pending",
    "uid-1 Pending app=waiting",
    "uid-1 Running app=running",
    "uid-1 Running app=terminated",
    "uid-1 Running app=terminated",
    // No container left (the cache keeps a phase from going back).
    "uid-1 Pending",
    "uid-1 Pending",
  ]);
  // The relist the sandbox's DELETED woke lists nothing: nothing is served.
  relist(state, truth);
  assert.deepEqual(state.view(), []);
});

Deno.test("CriState serves nothing after a relist that lists nothing, whatever events said before it", () => {
  // Issue 37's quiet relist: two relists that both list nothing used to hand
  // back the list of before, with the pod the events had added.
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  relist(state, truth);
  const events = lifecycle(truth).flat();
  for (const e of events.slice(0, 7)) state.applyEvent(e);
  assert.equal(state.view().length, 1);
  relist(state, truth);
  assert.deepEqual(state.view(), []);
  relist(state, truth);
  assert.deepEqual(state.view(), []);
});

Deno.test("CriState removes a pod a relist read running once its removal's relist lists nothing", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  truth.runSandbox("sb1", "uid-1", "web");
  truth.createContainer("app1", "sb1", "app", 0);
  truth.startContainer("app1");
  relist(state, truth);
  assert.deepEqual(served(state), ["uid-1 Running app=running"]);
  const removal = [
    truth.stopContainer("app1"),
    truth.stopSandbox("sb1"),
    truth.removeContainer("app1"),
    truth.removeSandbox("sb1"),
  ].flat();
  assert.deepEqual(removal.map((e) => state.applyEvent(e)), [
    "applied",
    "applied",
    "applied",
    "relist",
  ]);
  relist(state, truth);
  assert.deepEqual(state.view(), []);
});

Deno.test("CriState never moves a container back on an older event", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  relist(state, truth);
  const [run, create, start, stop] = [
    truth.runSandbox("sb1", "uid-1", "web"),
    truth.createContainer("app1", "sb1", "app", 0),
    truth.startContainer("app1"),
    truth.stopContainer("app1", 2),
  ];
  for (const e of [...run!, ...create!, ...stop!]) state.applyEvent(e);
  assert.deepEqual(served(state), ["uid-1 Running app=terminated"]);
  // Late and repeated: no change.
  const view = state.view();
  for (const e of [...start!, ...create!, ...run!, ...stop!]) state.applyEvent(e);
  assert.equal(state.view(), view);
});

Deno.test("CriState covers an event stamped before its last relist started", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  const events = truth.runSandbox("sb1", "uid-1", "web");
  relist(state, truth);
  const view = state.view();
  assert.deepEqual(events.map((e) => state.applyEvent(e)), ["covered", "covered"]);
  assert.equal(state.view(), view);
});

Deno.test("CriState leaves an event without statuses, or one before any relist, to a relist", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  const [created] = truth.runSandbox("sb1", "uid-1", "web");
  assert.equal(state.applyEvent(created!), "relist");
  relist(state, truth);
  const bare = { ...truth.createContainer("app1", "sb1", "app", 0)[0]!, podSandboxStatus: null };
  assert.equal(state.applyEvent(bare), "relist");
  assert.deepEqual(served(state), ["uid-1 Pending"]);
});

Deno.test("CriState removes a pod at once on its sandbox's DELETED that carries the sandbox's status, and no late event brings it back", () => {
  const truth = new RuntimeTruth(START_NS);
  const state = newState();
  relist(state, truth);
  const run = truth.runSandbox("sb1", "uid-1", "web");
  const create = truth.createContainer("app1", "sb1", "app", 0);
  const stop = truth.stopSandbox("sb1");
  const removal = truth.removeSandbox("sb1", true);
  for (const e of [...run, ...create, ...stop]) state.applyEvent(e);
  assert.equal(state.view().length, 1);
  assert.deepEqual(removal.map((e) => state.applyEvent(e)), ["applied", "applied"]);
  assert.deepEqual(state.view(), []);
  // Late, out of order: the pod stays gone.
  assert.deepEqual([...create, ...run].map((e) => state.applyEvent(e)), [
    "covered",
    "covered",
    "covered",
  ]);
  assert.deepEqual(state.view(), []);
});
