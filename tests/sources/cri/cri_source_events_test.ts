// The CRI source takes a runtime event that carries its pod's statuses into
// its view between lists, as the kubelet's evented PLEG does; anything it
// cannot be sure of is left to a relist.
import assert from "node:assert/strict";
import { systemClock } from "../../../src/clock.ts";
import { Registry } from "../../../src/metrics/exposition.ts";
import { createMetrics } from "../../../src/metrics/metrics.ts";
import type { Metrics } from "../../../src/metrics/metrics.ts";
import {
  removeKubeletPod,
  runKubeletPod,
  startKubeletContainer,
} from "../../../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../../../src/sim/runtime/cri_runtime.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import { CriPodSource } from "../../../src/sources/cri/mod.ts";
import type { SourceChanges } from "../../../src/sources/mod.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
} from "../../../src/sources/cri/_types.ts";
import { poll } from "../../_support/poll.ts";
import { Prng } from "../../_support/prng.ts";
import { byUid, Harness, type HarnessOptions, runPods } from "./_harness.ts";

/** What the source told: views it pushed (the last kept) and relists it asked for. */
function told():
  & { applied: number; hints: number; latest?: readonly PodSnapshot[] }
  & SourceChanges {
  const seen = {
    applied: 0,
    hints: 0,
    latest: undefined as readonly PodSnapshot[] | undefined,
    relist: () => void seen.hints++,
    view: (view: readonly PodSnapshot[]) => {
      seen.applied++;
      seen.latest = view;
    },
  };
  return seen;
}

/** The CRI source watching events, with what became of each. */
async function watching(options: HarnessOptions = {}) {
  const h = await Harness.start(options);
  const seen = told();
  const stop = new AbortController();
  const done = h.source.watchChanges(stop.signal, seen);
  // A second subscription counts what the runtime sent.
  const sent = { count: 0 };
  const counting = (async () => {
    for await (const _ of h.runtime.getContainerEvents({}, { signal: stop.signal })) sent.count++;
  })();
  await poll(() => h.runtime.eventSubscribers >= 2 ? true : undefined);
  return {
    h,
    seen,
    /** Lists, as the poller would: the list's view is the latest. */
    async list(): Promise<readonly PodSnapshot[]> {
      return seen.latest = await h.list();
    },
    /** The view the poller would hold: the last list's or pushed one. */
    view(): readonly PodSnapshot[] {
      return seen.latest ?? [];
    },
    /** Waits until the source has dealt with every event sent after `before`. */
    async settled(before: number): Promise<void> {
      await poll(() => sent.count > before ? true : undefined);
      await poll(async () => await dealtWith(h.metrics) === sent.count ? true : undefined);
    },
    sent,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await done;
      await counting;
      await h[Symbol.asyncDispose]();
    },
  };
}

/** The same runtime read afresh, with no history. */
function freshRead(runtime: SimCriRuntime) {
  return new CriPodSource({ runtime, nodeName: "node-1", hostIPs: ["192.168.1.10"] })
    .list(AbortSignal.timeout(10_000));
}

/** Events the source dealt with, whatever became of them. */
async function dealtWith(metrics: Metrics): Promise<number> {
  return (await metrics.runtimeEvents.get()).values.reduce((sum, v) => sum + v.value, 0);
}

async function eventsBy(metrics: Metrics, outcome: string): Promise<number> {
  const values = (await metrics.runtimeEvents.get()).values;
  return values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

Deno.test("CriPodSource takes an event with its pod's statuses into its view, without a list", async () => {
  await using w = await watching();
  const ran = w.sent.count;
  const [pod] = await runPods(w.h.runtime, 2);
  await w.settled(ran);
  await w.list();
  const hints = w.seen.hints;
  const lists = w.h.runtime.calls.listContainers;
  const inspections = w.h.runtime.calls.containerStatus;

  const before = w.sent.count;
  w.h.runtime.exitContainer(pod!.containerIds["app"]!, { exitCode: 3, reason: "Error" });
  await w.settled(before);

  assert.equal(w.seen.hints, hints, "no event was left to a relist");
  const held = byUid(w.view()).get("uid-0")!;
  assert.match(JSON.stringify(held.pod.status), /"exitCode":3\b/, "the exit is in the view");
  assert.equal(w.h.runtime.calls.listContainers, lists, "without a list");
  assert.equal(w.h.runtime.calls.containerStatus, inspections, "or an inspection");
  assert.deepStrictEqual(byUid(w.view()), byUid(await freshRead(w.h.runtime)));
  assert.equal(await eventsBy(w.h.metrics, "applied"), w.seen.applied);
  // The next list agrees and changes nothing.
  const view = w.view();
  assert.equal(await w.list(), view);
});

Deno.test("CriPodSource counts an event stamped before its last list started as covered by it", async () => {
  // The source's clock a minute ahead of the runtime's: every event is older
  // than the list before it, which read its change.
  await using w = await watching({ sourceClock: { now: () => systemClock.now() + 60_000 } });
  const [pod] = await runPods(w.h.runtime, 1);
  const listed = await w.list();
  const before = w.sent.count;
  w.h.runtime.exitContainer(pod!.containerIds["app"]!, { exitCode: 3 });
  await poll(() => w.sent.count > before ? true : undefined);
  await poll(async () => await eventsBy(w.h.metrics, "covered") > 0 ? true : undefined);
  assert.deepEqual([w.seen.applied, w.seen.hints], [0, 0]);
  assert.equal(w.view(), listed, "the view is the list's until the next list");
});

Deno.test("CriPodSource never moves a pod back on an event stamped while its list read", async () => {
  const runtime = new SimCriRuntime({ runtimeName: "containerd" });
  const { sandboxId, containerIds } = await runKubeletPod(runtime, {
    name: "web",
    uid: "uid-web",
    containers: [{ name: "app", image: "busybox:1" }, { name: "side", image: "busybox:1" }],
  });
  // What an event sent now would carry: both containers running.
  const old = {
    containerId: containerIds["app"]!,
    containerEventType: CONTAINER_EVENT_TYPE.started,
    podSandboxStatus: (await runtime.podSandboxStatus({ podSandboxId: sandboxId })).status,
    containersStatuses: await Promise.all(
      Object.values(containerIds).map(async (id) =>
        (await runtime.containerStatus({ containerId: id })).status!
      ),
    ),
  };
  runtime.exitContainer(containerIds["app"]!, { exitCode: 3 });
  await runtime.removeContainer({ containerId: containerIds["side"]! });
  // The event reaches the source after a list read the newer state, stamped
  // while that list read (its clock stands still: the read is 1 ms long).
  const events: ContainerEventResponse[] = [];
  const stop = new AbortController();
  const metrics = createMetrics(new Registry());
  const source = new CriPodSource({
    runtime: {
      listPodSandbox: (r) => runtime.listPodSandbox(r),
      listContainers: (r) => runtime.listContainers(r),
      podSandboxStatus: (r) => runtime.podSandboxStatus(r),
      containerStatus: (r) => runtime.containerStatus(r),
      async *getContainerEvents() {
        yield* events;
        await new Promise((resolve) => stop.signal.addEventListener("abort", resolve));
      },
    },
    nodeName: "node-1",
    metrics,
    clock: { now: () => listAt },
  });
  // The list starts a few ms after all of it was made (the clock's resolution is a ms).
  await new Promise((resolve) => setTimeout(resolve, 5));
  const listAt = systemClock.now();
  await source.list(AbortSignal.timeout(10_000));
  events.push({ ...old, createdAt: listAt * 1e6 + 500_000 });
  const seen = told();
  const done = source.watchChanges(stop.signal, seen);
  await poll(async () => await dealtWith(metrics) === 1 ? true : undefined);
  assert.equal(await eventsBy(metrics, "applied"), 1);
  stop.abort();
  await done;
  assert.deepEqual([seen.applied, seen.hints], [0, 0], "taken in, and the view did not change");
  assert.equal(seen.latest, undefined, "no view pushed: the list's stays");
});

Deno.test("CriPodSource leaves an event without statuses to a relist", async () => {
  await using w = await watching({ eventStatuses: false });
  const [pod] = await runPods(w.h.runtime, 1);
  const listed = await w.list();
  const before = w.sent.count;
  w.h.runtime.exitContainer(pod!.containerIds["app"]!, { exitCode: 3 });
  await w.settled(before);
  assert.equal(w.seen.applied, 0);
  assert.equal(w.view(), listed);
});

Deno.test("CriPodSource takes no event in before its first list", async () => {
  await using w = await watching();
  const before = w.sent.count;
  await runPods(w.h.runtime, 1);
  await w.settled(before);
  assert.equal(w.seen.applied, 0);
  assert.deepEqual(w.view(), []);
});

Deno.test("CriPodSource's view, from events alone, equals a fresh read at every step of a churn", async () => {
  // The source's clock a minute behind: every event is newer than every list.
  await using w = await watching({ sourceClock: { now: () => systemClock.now() - 60_000 } });
  const { runtime } = w.h;
  const prng = new Prng(20261203);
  const pods: {
    sandboxId: string;
    containerIds: Record<string, string>;
    uid: string;
    killed?: boolean;
  }[] = [];
  let next = 0;
  const run = async () => {
    const uid = `uid-${next}`;
    const handle = await runKubeletPod(runtime, {
      name: `pod-${next++}`,
      uid,
      containers: [{ name: "app", image: "busybox:1" }, { name: "side", image: "busybox:1" }],
    });
    pods.push({ ...handle, uid });
  };
  const runningIn = async (ids: Record<string, string>) => {
    for (const id of Object.values(ids)) {
      const { status } = await runtime.containerStatus({ containerId: id });
      if (status?.state === CONTAINER_STATE.running) return id;
    }
    return undefined;
  };
  for (let i = 0; i < 4; i++) await run();
  await w.list();
  const kinds = new Set<string>();
  // Every step makes at least one event: one that would not runs a pod instead.
  for (let step = 0; step < 40; step++) {
    const before = w.sent.count;
    const pod = pods.length > 0 ? prng.pick(pods) : undefined;
    const kind = pod === undefined ? 0 : prng.int(6);
    const running = pod === undefined ? undefined : await runningIn(pod.containerIds);
    if (kind === 1 && running !== undefined) {
      kinds.add("exit");
      runtime.exitContainer(running, { exitCode: 1 });
    } else if (kind === 2 && !pod!.killed) {
      kinds.add("kill sandbox");
      runtime.killSandbox(pod!.sandboxId);
      pod!.killed = true;
    } else if (kind === 3) {
      kinds.add("remove pod");
      await removeKubeletPod(runtime, pod!.sandboxId);
      pods.splice(pods.indexOf(pod!), 1);
    } else if (kind === 4 && Object.keys(pod!.containerIds).length > 1) {
      // A container removed on its own: the next event's statuses leave it out.
      kinds.add("remove container");
      const name = prng.pick(Object.keys(pod!.containerIds));
      await runtime.removeContainer({ containerId: pod!.containerIds[name]! });
      delete pod!.containerIds[name];
    } else if (kind === 5 && !pod!.killed) {
      kinds.add("restart");
      pod!.containerIds["app"] = await startKubeletContainer(runtime, pod!.sandboxId, {
        pod: { name: "restarted", uid: pod!.uid },
        container: { name: "app", image: "busybox:1" },
        attempt: step + 1,
      });
    } else {
      kinds.add("run");
      await run();
    }
    await w.settled(before);
    if (kind === 3 && w.seen.hints > 0) {
      // A sandbox DELETED without its status (containerd's) leaves the
      // removal to the relist it wakes.
      w.seen.hints = 0;
      await w.list();
    }
    assert.equal(w.seen.hints, 0, `step ${step} (${[...kinds].at(-1)}): every event was taken in`);
    assert.deepStrictEqual(
      byUid(w.view()),
      byUid(await freshRead(runtime)),
      `step ${step}`,
    );
  }
  assert.equal(kinds.size, 6, `every kind of step ran: ${[...kinds]}`);
});

Deno.test("CriPodSource takes an event that arrives while it reads in after the read, against what it read", async () => {
  const runtime = new SimCriRuntime({ runtimeName: "containerd" });
  const metrics = createMetrics(new Registry());
  const [pod] = await runPods(runtime, 1);
  // The read's container list waits for the test.
  let gate: PromiseWithResolvers<void> | undefined;
  const reader = {
    listPodSandbox: runtime.listPodSandbox.bind(runtime),
    podSandboxStatus: runtime.podSandboxStatus.bind(runtime),
    containerStatus: runtime.containerStatus.bind(runtime),
    getContainerEvents: runtime.getContainerEvents.bind(runtime),
    version: runtime.version.bind(runtime),
    listContainers: async (...args: Parameters<SimCriRuntime["listContainers"]>) => {
      const answer = await runtime.listContainers(...args);
      await gate?.promise;
      return answer;
    },
  };
  const source = new CriPodSource({ runtime: reader, nodeName: "node-1", metrics });
  await source.list(AbortSignal.timeout(10_000));
  const stop = new AbortController();
  const seen = told();
  const watching = source.watchChanges(stop.signal, seen);
  await poll(() => runtime.eventSubscribers > 0 ? true : undefined);
  try {
    gate = Promise.withResolvers<void>();
    const reading = source.list(AbortSignal.timeout(10_000));
    await poll(() => runtime.calls.listContainers >= 2 ? true : undefined);
    // The read has its container list (the app running); then the app exits.
    runtime.exitContainer(pod!.containerIds["app"]!, { exitCode: 4 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(await dealtWith(metrics), 0, "held while the read is in progress");
    assert.equal(seen.applied, 0);
    gate.resolve();
    const read = await reading;
    assert.doesNotMatch(JSON.stringify(read), /"exitCode":4\b/, "the read's view is what it read");
    await poll(() => seen.applied > 0 ? true : undefined);
    assert.match(JSON.stringify(seen.latest), /"exitCode":4\b/, "then the exit, taken in");
    assert.equal(await eventsBy(metrics, "applied"), 1);
    assert.equal(seen.hints, 0);
  } finally {
    gate?.resolve();
    stop.abort();
    await watching;
  }
});
