// KubeletPodsApiSource against a fake kubelet Pods API server in another
// process (tests/_support/fake_kubelet_podsapi_server.py: Python grpcio).
import assert from "node:assert/strict";
import { createLogger, silentLogger } from "../../../src/log.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import type { PodObject, PodSnapshot } from "../../../src/model/pod.ts";
import { KubeletPodsApiSource } from "../../../src/sources/kubelet_podsapi/mod.ts";
import { SourceUnavailableError } from "../../../src/sources/mod.ts";
import { makePod } from "../../_fixtures/pods.ts";
import { fakeKubeletTest, startFakeKubeletPodsApi } from "../../_support/fake_kubelet_podsapi.ts";
import { metricValue } from "../../_support/metric_value.ts";
import { pollUntil } from "../../_support/poll.ts";
import { ViewRecorder } from "../../_support/view_recorder.ts";

interface Rig extends AsyncDisposable {
  readonly dir: string;
  readonly path: string;
  readonly source: KubeletPodsApiSource;
  readonly registry: ReturnType<typeof createMetricsRegistry>;
  /** Views the source handed on. */
  changes(): number;
  /** Why the source's last view is held; `undefined` when live. */
  heldBecause(): string | undefined;
  list(): Promise<readonly PodSnapshot[]>;
  /** Waits until the listed view satisfies `check`. */
  until(
    check: (view: readonly PodSnapshot[]) => boolean,
    what: string,
  ): Promise<readonly PodSnapshot[]>;
}

async function rig(
  options: { ownSocket?: (id: { dev: number; ino: number }) => boolean } = {},
): Promise<Rig> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-kpa-" });
  const path = `${dir}/pods-api.sock`;
  const registry = createMetricsRegistry();
  const source = new KubeletPodsApiSource({
    endpoint: `unix://${path}`,
    log: silentLogger,
    metrics: registry.metrics,
    retryInitialMs: 5,
    retryMaxMs: 40,
    ...(options.ownSocket ? { isOwnSocket: options.ownSocket } : {}),
  });
  const stop = new AbortController();
  const recorder = new ViewRecorder();
  const watching = source.run(recorder, stop.signal);
  const list = () => recorder.latest();
  return {
    dir,
    path,
    source,
    registry,
    changes: () => recorder.views,
    heldBecause: () => recorder.heldBecause,
    list,
    async until(check, what) {
      let view: readonly PodSnapshot[] = [];
      await pollUntil(async () => {
        try {
          view = await list();
        } catch {
          return false;
        }
        return check(view);
      }, what);
      return view;
    },
    async [Symbol.asyncDispose]() {
      stop.abort();
      await watching;
      source.close();
      await source.closed();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

function uids(view: readonly PodSnapshot[]): string[] {
  return view.map((s) => s.uid).sort();
}

function byUid(view: readonly PodSnapshot[], uid: string): PodSnapshot {
  const found = view.find((s) => s.uid === uid);
  assert.ok(found, `pod ${uid} in the view`);
  return found;
}

function phase(pod: PodObject): unknown {
  return (pod.status as { phase?: unknown } | undefined)?.phase;
}

const A = makePod({ name: "a", uid: "uid-a", labels: { app: "a" } });
const B = makePod({ name: "b", uid: "uid-b" });
const C = makePod({ name: "c", uid: "uid-c" });

fakeKubeletTest(
  "KubeletPodsApiSource takes the initial list up to INITIAL_SYNC_COMPLETE as its first view",
  async () => {
    await using r = await rig();
    await using kubelet = await startFakeKubeletPodsApi(r.path);
    await kubelet.set([B, A]);
    const view = await r.until((v) => v.length === 2, "the first view");
    assert.deepEqual(uids(view), ["uid-a", "uid-b"]);
    assert.deepEqual(byUid(view, "uid-a").pod, A, "the kubelet's whole pod, decoded");
    assert.equal(r.heldBecause(), undefined);
    assert.equal(r.source.state, "live");
    const m = r.registry.metrics;
    assert.equal(await metricValue(m.kubeletPodsApiConnected), 1);
    assert.equal(await metricValue(m.kubeletPodsApiEvents, { type: "added" }), 2);
    assert.equal(await metricValue(m.kubeletPodsApiEvents, { type: "initial_sync_complete" }), 1);
    assert.ok(r.changes() >= 1, "the first view was signalled");
  },
);

fakeKubeletTest(
  "KubeletPodsApiSource decodes times, quantities and int-or-strings as protobuf encodes them",
  async () => {
    await using r = await rig();
    await using kubelet = await startFakeKubeletPodsApi(r.path);
    const rich: PodObject = {
      metadata: {
        uid: "uid-rich",
        name: "rich",
        namespace: "default",
        creationTimestamp: "2026-01-01T00:00:00Z",
        ownerReferences: [{
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: "rich-rs",
          uid: "rs-1",
          controller: true,
        }],
      },
      spec: {
        nodeName: "node-1",
        containers: [{
          name: "app",
          image: "app:1",
          ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
          readinessProbe: { httpGet: { path: "/ready", port: "http" }, periodSeconds: 5 },
          livenessProbe: { tcpSocket: { port: 8080 } },
          resources: { limits: { memory: "64Mi", cpu: "500m" }, requests: { cpu: "1" } },
        }],
      },
      status: {
        phase: "Running",
        startTime: "2026-01-01T00:00:02Z",
        conditions: [{
          type: "Ready",
          status: "True",
          lastTransitionTime: "2026-01-01T00:00:03Z",
        }],
        containerStatuses: [{
          name: "app",
          image: "app:1",
          imageID: "sha256:0123",
          containerID: "containerd://abc",
          ready: true,
          started: true,
          restartCount: 2,
          state: { running: { startedAt: "2026-01-01T00:00:04Z" } },
          lastState: {
            terminated: {
              exitCode: 137,
              reason: "OOMKilled",
              startedAt: "2026-01-01T00:00:01Z",
              finishedAt: "2026-01-01T00:00:02Z",
            },
          },
        }],
      },
    };
    await kubelet.set([rich]);
    const view = await r.until((v) => v.length === 1, "the pod");
    assert.deepEqual(byUid(view, "uid-rich").pod, rich);
  },
);

fakeKubeletTest(
  "KubeletPodsApiSource applies live ADDED, MODIFIED and a DELETED that carries only the keys",
  async () => {
    await using r = await rig();
    await using kubelet = await startFakeKubeletPodsApi(r.path);
    await kubelet.set([A, B]);
    const first = await r.until((v) => v.length === 2, "the first view");
    const before = r.changes();
    const a2 = makePod({ name: "a", uid: "uid-a", labels: { app: "a", v: "2" } });
    await kubelet.set([a2, C]);
    const view = await r.until((v) => uids(v).join() === "uid-a,uid-c", "a, c");
    assert.deepEqual(byUid(view, "uid-a").pod.metadata.labels, { app: "a", v: "2" });
    assert.deepEqual(byUid(view, "uid-c").pod, C);
    assert.notEqual(first, view, "a new view array");
    assert.ok(r.changes() > before, "each change woke the daemon");
    const m = r.registry.metrics;
    assert.equal(await metricValue(m.kubeletPodsApiEvents, { type: "modified" }), 1);
    assert.equal(await metricValue(m.kubeletPodsApiEvents, { type: "deleted" }), 1);
    assert.equal(await metricValue(m.kubeletPodsApiEvents, { type: "added" }), 3);
  },
);

fakeKubeletTest(
  "KubeletPodsApiSource is not synced while the kubelet answers FAILED_PRECONDITION, then syncs",
  async () => {
    await using r = await rig();
    await using kubelet = await startFakeKubeletPodsApi(r.path, { initializing: true });
    await kubelet.set([A]);
    await pollUntil(() => r.source.state === "initializing", "the initializing state");
    await assert.rejects(r.list(), (err: unknown) => {
      assert.ok(err instanceof SourceUnavailableError);
      assert.equal(err.reason, "initializing");
      assert.match(err.message, /initializing/);
      return true;
    });
    // It keeps retrying (with backoff) while the kubelet initializes.
    await pollUntil(async () => {
      await kubelet.stats();
      return r.source.state === "initializing";
    }, "still initializing");
    await kubelet.ready(true);
    const view = await r.until((v) => v.length === 1, "the view once ready");
    assert.deepEqual(uids(view), ["uid-a"]);
  },
);

for (
  const [name, end, reason] of [
    ["a watch dropped as too slow (RESOURCE_EXHAUSTED)", "drop", "resource_exhausted"],
    ["a watch the kubelet closed", "close", "closed"],
  ] as const
) {
  fakeKubeletTest(
    `KubeletPodsApiSource after ${name} watches again and diffs: unchanged pods stay the same objects`,
    async () => {
      await using r = await rig();
      await using kubelet = await startFakeKubeletPodsApi(r.path);
      await kubelet.set([A, B]);
      const first = await r.until((v) => v.length === 2, "the first view");
      await kubelet.until((s) => s.watchers === 1, "one watch");
      if (end === "drop") await kubelet.drop();
      else await kubelet.closeWatches();
      // The source watches again; while it does, nothing changes.
      await kubelet.until((s) => s.watches === 2 && s.watchers === 1, "a second watch");
      await pollUntil(() => r.source.state === "live", "live again");
      const again = await r.list();
      assert.equal(again, first, "the very same view: no pod changed");
      const m = r.registry.metrics;
      assert.equal(await metricValue(m.kubeletPodsApiReconnects, { reason }), 1);
      await pollUntil(
        async () => await metricValue(m.kubeletPodsApiConnected) === 1,
        "connected again",
      );
      // Live events flow on the new watch.
      await kubelet.set([A]);
      const view = await r.until((v) => v.length === 1, "b deleted");
      assert.equal(byUid(view, "uid-a"), byUid(first, "uid-a"), "a is still the same snapshot");
    },
  );
}

fakeKubeletTest(
  "KubeletPodsApiSource holds its pods through a kubelet restart and resyncs without spurious changes",
  async () => {
    await using r = await rig();
    const kubelet = await startFakeKubeletPodsApi(r.path);
    await kubelet.set([A, B, C]);
    const first = await r.until((v) => v.length === 3, "the first view");
    await kubelet.until((s) => s.watchers === 1, "one watch");

    // The kubelet dies with our watch open: its socket file stays, nobody listens.
    await kubelet.kill();
    const held = await r.until((v) => v.length === 3 && r.heldBecause() !== undefined, "held");
    assert.equal(r.source.state, "down");
    assert.equal(held, first, "the same view, handed on as held");
    assert.match(r.heldBecause() ?? "", /not answering.*status from the container runtime/);
    assert.equal(await metricValue(r.registry.metrics.kubeletPodsApiConnected), 0);
    // Still answers list() (the pods do not vanish).
    assert.equal((await r.list()).length, 3);

    // A new kubelet: initializing at first, then its status manager knows nothing
    // yet (Pending, Ready False); b changed meanwhile and c was deleted.
    await using restarted = await startFakeKubeletPodsApi(r.path, {
      initializing: true,
      unknownStatus: true,
    });
    const b2 = makePod({ name: "b", uid: "uid-b", labels: { rev: "2" } });
    await restarted.set([A, b2]);
    await pollUntil(async () => {
      await restarted.stats();
      return r.source.state === "down";
    }, "still down while initializing");
    await restarted.ready(true);
    const back = await r.until(
      (v) => v.length === 2 && r.heldBecause() === undefined,
      "live again",
    );
    assert.equal(r.source.state, "live");
    // a: the kubelet's placeholder status is not news; a is its old live snapshot.
    assert.equal(byUid(back, "uid-a"), byUid(first, "uid-a"), "unchanged a: the same snapshot");
    // b: new labels taken, its known Running phase kept over the placeholder.
    const b = byUid(back, "uid-b");
    assert.deepEqual(b.pod.metadata.labels, { rev: "2" });
    assert.equal(phase(b.pod), "Running");
    assert.deepEqual(uids(back), ["uid-a", "uid-b"], "c, gone from the new list, is deleted");
    // The status manager catches up: the real status equals what was held, no change.
    const seen = r.changes();
    await restarted.unknownStatus(false);
    await restarted.until((s) => s.watchers === 1, "watch open");
    await restarted.set([A, b2]);
    const after = await r.list();
    assert.equal(byUid(after, "uid-a"), byUid(first, "uid-a"));
    assert.equal(r.changes(), seen, "no change signalled for pods that did not change");
  },
);

fakeKubeletTest(
  "KubeletPodsApiSource reports no pods, synced, when there is no kubelet Pods API, and picks one up later",
  async () => {
    await using r = await rig();
    assert.deepEqual(await r.list(), [], "no socket: an empty view, not an error");
    assert.equal(r.source.state, "absent");
    assert.equal(r.heldBecause(), undefined, "an older node is not degraded");
    // A stale socket file nobody listens on is no Pods API either.
    const stale = Deno.listen({ transport: "unix", path: r.path });
    stale.close();
    await pollUntil(() => r.source.state === "absent", "absent with a stale file");
    assert.deepEqual(await r.list(), []);
    // The node's kubelet starts serving it.
    await using kubelet = await startFakeKubeletPodsApi(r.path);
    await kubelet.set([A]);
    const view = await r.until((v) => v.length === 1, "the kubelet's pods");
    assert.deepEqual(uids(view), ["uid-a"]);
  },
);

Deno.test("KubeletPodsApiSource does not read this daemon's own compatibility socket", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-kpa-own-" });
  const path = `${dir}/pods-api.sock`;
  // What listens on the path is this daemon's own socket.
  const listener = Deno.listen({ transport: "unix", path });
  const info = await Deno.stat(path);
  const lines: string[] = [];
  const source = new KubeletPodsApiSource({
    endpoint: path,
    log: createLogger({ write: (line) => lines.push(line) }),
    isOwnSocket: (id) => id.dev === info.dev && id.ino === info.ino,
    retryInitialMs: 5,
    retryMaxMs: 40,
  });
  let dialed = false;
  const accepting = listener.accept().then((c) => {
    dialed = true;
    c.close();
  }, () => {});
  const recorder = new ViewRecorder();
  const stop = new AbortController();
  const running = source.run(recorder, stop.signal);
  try {
    assert.deepEqual(await recorder.latest(), []);
    assert.equal(source.state, "absent");
    assert.ok(
      lines.some((l) => l.includes("this daemon's own compatibility socket")),
      lines.join("\n"),
    );
    assert.equal(dialed, false, "never dialed its own socket");
  } finally {
    stop.abort();
    await running;
    source.close();
    await source.closed();
    listener.close();
    await accepting;
    await Deno.remove(dir, { recursive: true });
  }
});

fakeKubeletTest(
  "KubeletPodsApiSource skips an UNSPECIFIED event and a pod without a UID, counting them",
  async () => {
    await using r = await rig();
    await using kubelet = await startFakeKubeletPodsApi(r.path);
    await kubelet.set([A]);
    const first = await r.until((v) => v.length === 1, "the first view");
    await kubelet.until((s) => s.watchers === 1, "one watch");
    await kubelet.raw(0, B);
    await kubelet.raw(1, { metadata: { name: "x", namespace: "default", uid: "" } } as PodObject);
    await kubelet.set([A, C]);
    const view = await r.until((v) => v.length === 2, "c added");
    assert.deepEqual(uids(view), ["uid-a", "uid-c"], "b (UNSPECIFIED) was not added");
    assert.equal(byUid(view, "uid-a"), byUid(first, "uid-a"));
    const rejected = r.registry.metrics.sourceItemsRejected;
    assert.equal(await metricValue(rejected, { reason: "unspecified_event" }), 1);
    assert.equal(await metricValue(rejected, { reason: "no_uid" }), 1);
  },
);
