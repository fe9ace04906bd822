// The relist is the authority, by construction (issue 37): random runtime
// histories whose events reach the CRI state out of order, duplicated,
// missing, stripped of their statuses, or stamped while a relist read,
// interleaved with relists. After every relist the view is the view a fresh
// state builds from that relist's answers alone; between relists an event
// only moves things forward.
import assert from "node:assert/strict";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import { CriState, type EventOutcome } from "../../../src/sources/cri/cri_state.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
} from "../../../src/sources/cri/mod.ts";
import { Prng } from "../../_support/prng.ts";
import { RuntimeTruth, type TruthRead } from "./_runtime_truth.ts";

const SEEDS = 40;
const STEPS = 400;

function newState(): CriState {
  return new CriState({ nodeName: "node-1", runtimeName: "containerd" });
}

function byUid(view: readonly PodSnapshot[]): [string, unknown][] {
  return view.map((s) => [s.uid, s.pod] as [string, unknown]).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0
  );
}

/** One kubelet-like call on a random pod of `truth`, with the events it makes. */
function randomCall(
  truth: RuntimeTruth,
  prng: Prng,
  next: { n: number },
): ContainerEventResponse[] {
  const sandboxes = truth.sandboxIds();
  const containers = truth.containers();
  const ready = sandboxes.filter((id) => truth.sandboxState(id) === 0);
  const roll = prng.int(10);
  if (roll === 0 || sandboxes.length === 0) {
    const n = next.n++;
    return truth.runSandbox(`sb${n}`, `uid-${n}`, `pod-${n}`);
  }
  if (roll <= 2 && ready.length > 0) {
    const sb = prng.pick(ready);
    // A restart (attempt 1) of an exited app, else a new app.
    const exited = containers.filter((c) =>
      c.sandboxId === sb && c.state === CONTAINER_STATE.exited && c.attempt === 0 &&
      !containers.some((o) => o.sandboxId === sb && o.name === c.name && o.attempt === 1)
    );
    const n = next.n++;
    if (roll === 1 && exited.length > 0) {
      return truth.createContainer(`c${n}`, sb, prng.pick(exited).name, 1);
    }
    return truth.createContainer(`c${n}`, sb, `app${n}`, 0);
  }
  const created = containers.filter((c) => c.state === CONTAINER_STATE.created);
  if (roll === 3 && created.length > 0) return truth.startContainer(prng.pick(created).id);
  const running = containers.filter((c) => c.state === CONTAINER_STATE.running);
  if (roll === 4 && running.length > 0) {
    return truth.stopContainer(prng.pick(running).id, prng.int(3));
  }
  if (roll === 5 && ready.length > 0) return truth.stopSandbox(prng.pick(ready));
  const exited = containers.filter((c) => c.state === CONTAINER_STATE.exited);
  if (roll === 6 && exited.length > 0) return truth.removeContainer(prng.pick(exited).id);
  if (roll >= 7) {
    const stopped = sandboxes.filter((id) => truth.sandboxState(id) === 1);
    if (stopped.length > 0) return truth.removeSandbox(prng.pick(stopped), prng.int(2) === 0);
  }
  return [];
}

/** How the stream mangles one event on its way: missing, twice, without statuses, or as sent. */
function deliverLater(e: ContainerEventResponse, prng: Prng, pending: ContainerEventResponse[]) {
  const roll = prng.int(20);
  if (roll === 0) return; // lost
  if (roll === 1) pending.push(e); // sent twice
  if (roll === 2) pending.push({ ...e, podSandboxStatus: null, containersStatuses: [] });
  else pending.push(e);
}

/** Answers of a relist that reads `read`: the statuses of what `state` asks to inspect. */
function answersFor(
  read: TruthRead,
  ids: { sandboxIds: readonly string[]; containerIds: readonly string[] },
) {
  return {
    sandboxes: read.sandboxes,
    containers: read.containers,
    sandboxStatuses: new Map(ids.sandboxIds.map((id) => [id, read.sandboxStatuses.get(id)!])),
    containerStatuses: new Map(
      ids.containerIds.map((id) => [id, read.containerStatuses.get(id)!]),
    ),
  };
}

/** Container ID → how far on its state is, as served. */
function containerRanks(view: readonly PodSnapshot[]): Map<string, number> {
  const ranks = new Map<string, number>();
  for (const s of view) {
    const status = s.pod.status as {
      containerStatuses?: {
        containerID?: string;
        state: Record<string, unknown>;
        lastState?: { terminated?: { containerID?: string } };
      }[];
    };
    for (const c of status.containerStatuses ?? []) {
      const state = Object.keys(c.state)[0];
      ranks.set(c.containerID ?? "", state === "waiting" ? 0 : state === "running" ? 1 : 2);
      // The attempt before it, shown as its last state.
      const last = c.lastState?.terminated?.containerID;
      if (last !== undefined) ranks.set(last, 2);
    }
  }
  return ranks;
}

Deno.test("CriState's view after every relist is the view of that relist alone, whatever events came", () => {
  const outcomes = new Map<EventOutcome, number>();
  /** What became of the sandboxes' DELETED that carried a status. */
  const sandboxDeletes = new Map<EventOutcome, number>();
  let relists = 0;
  let eventsInWindow = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const prng = new Prng(seed * 7919);
    const truth = new RuntimeTruth(1e15);
    const state = newState();
    const next = { n: 0 };
    let pending: ContainerEventResponse[] = [];
    let ranks = new Map<string, number>();
    const gone = new Set<string>();
    let uids = new Set<string>();
    const goneUids = new Set<string>();
    const check = (where: string) => {
      const nowUids = new Set(state.view().map((p) => p.uid));
      for (const uid of nowUids) assert.ok(!goneUids.has(uid), `${where}: pod ${uid} came back`);
      for (const uid of uids) if (!nowUids.has(uid)) goneUids.add(uid);
      uids = nowUids;
      const now = containerRanks(state.view());
      for (const [id, rank] of now) {
        assert.ok(!gone.has(id), `${where}: container ${id} came back`);
        assert.ok(rank >= (ranks.get(id) ?? rank), `${where}: container ${id} moved back`);
      }
      for (const id of ranks.keys()) if (!now.has(id)) gone.add(id);
      ranks = now;
    };
    for (let step = 0; step < STEPS; step++) {
      const where = `seed ${seed} step ${step}`;
      const roll = prng.int(10);
      if (roll < 5) {
        for (const e of randomCall(truth, prng, next)) deliverLater(e, prng, pending);
      } else if (roll < 8) {
        // Some of what is pending arrives, in any order.
        const order = pending.map((e) => ({ e, key: prng.next() })).sort((a, b) => a.key - b.key);
        const count = prng.int(order.length + 1);
        pending = order.slice(count).map((x) => x.e);
        for (const { e } of order.slice(0, count)) {
          const outcome = state.applyEvent(e);
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (e.podSandboxStatus === null) assert.equal(outcome, "relist", where);
          if (
            e.containerId === e.podSandboxStatus?.id &&
            e.containerEventType === CONTAINER_EVENT_TYPE.deleted
          ) {
            sandboxDeletes.set(outcome, (sandboxDeletes.get(outcome) ?? 0) + 1);
          }
          check(where);
        }
      } else {
        // A relist: the runtime changes while it reads, before and after the
        // instant it reads at; those events arrive after it is applied.
        const fromNs = truth.now;
        const during: ContainerEventResponse[] = [];
        for (let i = prng.int(3); i > 0; i--) during.push(...randomCall(truth, prng, next));
        truth.now += 1 + prng.int(2_000);
        const read = truth.read();
        for (let i = prng.int(3); i > 0; i--) during.push(...randomCall(truth, prng, next));
        truth.now += 1 + prng.int(2_000);
        const window = { fromNs, toNs: truth.now };
        state.applyList(answersFor(read, state.toInspect(read.sandboxes, read.containers)), window);
        const fresh = newState();
        fresh.applyList(
          answersFor(read, {
            sandboxIds: [...read.sandboxStatuses.keys()],
            containerIds: [...read.containerStatuses.keys()],
          }),
          window,
        );
        assert.deepStrictEqual(byUid(state.view()), byUid(fresh.view()), where);
        check(where);
        relists++;
        eventsInWindow += during.length;
        for (const e of during) deliverLater(e, prng, pending);
      }
    }
  }
  // The histories covered what they are meant to.
  assert.ok(relists > SEEDS * 50, `relists: ${relists}`);
  assert.ok(eventsInWindow > 100, `events stamped while a relist read: ${eventsInWindow}`);
  for (const outcome of ["applied", "covered", "relist"] as const) {
    assert.ok((outcomes.get(outcome) ?? 0) > 100, `${outcome}: ${outcomes.get(outcome)}`);
  }
  assert.ok(
    (sandboxDeletes.get("applied") ?? 0) > 50,
    `sandbox DELETED applied: ${sandboxDeletes.get("applied")}`,
  );
});
