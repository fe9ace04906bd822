// The daemon over the kubelet's Pods API (a fake kubelet in another process)
// and a runtime view: what its own watchers see across a kubelet restart.
import assert from "node:assert/strict";
import { systemClock } from "../../../src/clock.ts";
import { parseServeConfig } from "../../../src/config.ts";
import { startDaemon } from "../../../src/daemon.ts";
import { silentLogger } from "../../../src/log.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import type { PodObject, PodSnapshot } from "../../../src/model/pod.ts";
import { decodePod } from "../../../src/proto/mod.ts";
import { KubeletPodsApiSource } from "../../../src/sources/kubelet_podsapi/mod.ts";
import type { PolledSource } from "../../../src/sources/mod.ts";
import { makePod } from "../../_fixtures/pods.ts";
import { startHarness, watch } from "../../_support/daemon_harness.ts";
import { fakeKubeletTest, startFakeKubeletPodsApi } from "../../_support/fake_kubelet_podsapi.ts";
import { poll, pollUntil } from "../../_support/poll.ts";
import { metricValue } from "../../_support/metric_value.ts";
import { GrpcError, PodQueryClient, PodsClient, STATUS } from "../../../src/client/mod.ts";
import { OwnSockets } from "../../../src/server/unix_socket.ts";
import { runtimePod } from "../../merge/_runtime.ts";

/** A stand-in for the CRI source: whatever the test says the runtime has. */
class RuntimeView implements PolledSource {
  readonly kind = "cri" as const;
  pods: PodSnapshot[] = [];
  list(): Promise<readonly PodSnapshot[]> {
    return Promise.resolve(this.pods);
  }
}

interface Event {
  type: string;
  pod: PodObject;
}

function events(messages: unknown[]): Event[] {
  return (messages as { type: string; pod?: Uint8Array }[]).map((m) => ({
    type: m.type,
    pod: m.pod === undefined || m.pod.length === 0
      ? ({} as PodObject)
      : decodePod(new Uint8Array(m.pod)),
  }));
}

const WEB = makePod({ name: "web", uid: "uid-web", labels: { app: "web" } });
WEB.metadata.ownerReferences = [{
  apiVersion: "apps/v1",
  kind: "ReplicaSet",
  name: "web-7d9c6b8f5",
  uid: "uid-rs",
  controller: true,
}];
const JOB = makePod({ name: "job", uid: "uid-job" });

function runtimeOf(pod: PodObject): PodSnapshot {
  return runtimePod({
    uid: pod.metadata.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    created: "2026-01-01T00:00:01Z",
    containers: [{
      name: "app",
      id: `${pod.metadata.name}`.padEnd(64, "0"),
      state: "running",
      created: "2026-01-01T00:00:02Z",
      started: "2026-01-01T00:00:03Z",
    }],
  });
}

fakeKubeletTest(
  "The daemon over the kubelet Pods API: no pod vanishes and no spurious event across a kubelet restart",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-kpa-daemon-" });
    const path = `${dir}/kubelet.sock`;
    const kubelet = await startFakeKubeletPodsApi(path);
    await kubelet.set([WEB, JOB]);
    const registry = createMetricsRegistry();
    const podsApi = new KubeletPodsApiSource({
      endpoint: path,
      log: silentLogger,
      metrics: registry.metrics,
      retryInitialMs: 5,
      retryMaxMs: 40,
    });
    const runtime = new RuntimeView();
    runtime.pods = [runtimeOf(WEB), runtimeOf(JOB)];
    try {
      await using h = await startHarness({ sources: [podsApi, runtime], registry });
      // No relist loops here: the first relistOnce() starts the watch and waits for its outcome.
      assert.ok(await h.daemon.relistOnce());
      assert.equal(podsApi.state, "live");
      const w = watch(h.v1alpha1);
      await w.waitFor(3);
      const initial = events(w.messages);
      assert.deepEqual(initial.map((e) => e.type), ["ADDED", "ADDED", "INITIAL_SYNC_COMPLETE"]);
      const web = initial.find((e) => e.pod.metadata?.uid === "uid-web")!.pod;
      assert.deepEqual(
        web.metadata.ownerReferences,
        WEB.metadata.ownerReferences,
        "spec from the kubelet",
      );
      assert.deepEqual(web.status, WEB.status, "status from the kubelet while it answers");

      // The kubelet crashes: pods stay, /readyz says so, no event.
      await kubelet.kill();
      await pollUntil(() => podsApi.state === "down", "the kubelet seen down");
      assert.ok(await h.daemon.relistOnce());
      assert.equal(h.daemon.cache.list().length, 2);
      const readyz = await h.http("/readyz");
      assert.equal(readyz.status, 200, "still ready: served from the runtime");
      assert.match(readyz.body, /^ok\ndegraded: kubelet Pods API at .* is not answering/);

      // It comes back with the same pods: still no event.
      await using again = await startFakeKubeletPodsApi(path, { initializing: true });
      await again.set([WEB, JOB]);
      await again.ready(true);
      await pollUntil(() => podsApi.state === "live", "the kubelet watch live again");
      assert.ok(await h.daemon.relistOnce());
      assert.doesNotMatch((await h.http("/readyz")).body, /degraded/);

      // The kubelet deletes the job; the runtime still has it: DELETED at once,
      // and it is the first event since the initial list.
      await again.set([WEB]);
      await pollUntil(async () => {
        await h.daemon.relistOnce();
        return h.daemon.cache.list().length === 1;
      }, "the job deleted");
      await w.waitFor(4);
      const after = events(w.messages).slice(3);
      assert.deepEqual(after.map((e) => [e.type, e.pod.metadata.uid]), [["DELETED", "uid-job"]]);
      assert.ok(after[0]!.pod.metadata.deletionTimestamp, "DELETED carries deletionTimestamp");
      w.cancel();
    } finally {
      podsApi.close();
      await podsApi.closed();
      await kubelet.kill();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

fakeKubeletTest(
  "The daemon passes the kubelet Pods API's changes to its watchers at once, not at the relist period",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-kpa-push-" });
    const path = `${dir}/kubelet.sock`;
    await using kubelet = await startFakeKubeletPodsApi(path);
    await kubelet.set([WEB]);
    const podsApi = new KubeletPodsApiSource({ endpoint: path, log: silentLogger });
    const config = parseServeConfig([
      "--socket",
      `${dir}/api/pods-api.sock`,
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
      // A relist period no test would wait for: only watchChanges can be fast.
      "--relist-period",
      "1h",
    ]);
    const daemon = await startDaemon(config, {
      log: silentLogger,
      clock: systemClock,
      sources: [podsApi],
      registry: createMetricsRegistry(),
    });
    try {
      await pollUntil(() => daemon.cache.list().length === 1, "the first view served");
      await kubelet.set([WEB, JOB]);
      await pollUntil(() => daemon.cache.list().length === 2, "the new pod served");
      await kubelet.set([JOB]);
      await pollUntil(() => daemon.cache.list().length === 1, "the deleted pod gone");
      assert.equal(daemon.cache.list()[0]!.uid, "uid-job");
    } finally {
      await daemon.close();
      podsApi.close();
      await podsApi.closed();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

fakeKubeletTest(
  "The daemon serves the kubelet's path until a kubelet takes it, then reads that kubelet",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-kpa-compat-" });
    const kubeletPath = `${dir}/kubelet/pods-api.sock`;
    const own = new OwnSockets();
    const registry = createMetricsRegistry();
    // The default set-up: the compatibility socket and the source on one path.
    const podsApi = new KubeletPodsApiSource({
      endpoint: kubeletPath,
      log: silentLogger,
      metrics: registry.metrics,
      isOwnSocket: (id) => own.has(id),
      retryInitialMs: 5,
      retryMaxMs: 40,
    });
    const runtime = new RuntimeView();
    runtime.pods = [runtimeOf(WEB)];
    const config = parseServeConfig([
      "--socket",
      `${dir}/api/pods-api.sock`,
      "--kubelet-compat-socket",
      kubeletPath,
      "--metrics-bind-address",
      "127.0.0.1:0",
    ]);
    const daemon = await startDaemon(config, {
      log: silentLogger,
      clock: systemClock,
      sources: [runtime, podsApi],
      registry,
      ownSockets: own,
    });
    const client = new PodsClient({ socket: kubeletPath, rateLimitRetries: 0 });
    try {
      // Older node: the daemon answers on the kubelet's path, and does not read itself.
      const served = await poll(async () => {
        const pods = await client.listPods().catch(() => undefined);
        return pods?.length === 1 ? pods : undefined;
      }, { what: "ListPods on the compatibility socket" });
      assert.equal(served[0]!.metadata.uid, "uid-web");
      assert.equal(podsApi.state, "absent", "its own socket is no kubelet");
      await assert.rejects(
        new PodQueryClient(client).list(),
        (err: unknown) => err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED,
        "only v1alpha1.Pods on the kubelet's path",
      );
      // The node is upgraded: its kubelet removes the file and binds its own.
      await using kubelet = await startFakeKubeletPodsApi(kubeletPath);
      await kubelet.set([WEB, JOB]);
      await pollUntil(
        async () => await metricValue(registry.metrics.compatSocketYielded) === 1,
        "the compatibility socket given up",
      );
      // The daemon now reads that kubelet: its spec, and its pod the runtime has not started.
      await pollUntil(() => daemon.cache.list().length === 2, "the kubelet's pods served");
      assert.deepEqual(
        daemon.cache.get("uid-web")!.pod.metadata.ownerReferences,
        WEB.metadata.ownerReferences,
      );
      assert.equal(await metricValue(registry.metrics.kubeletPodsApiConnected), 1);
      assert.equal(await metricValue(registry.metrics.compatSocketServing), 0);
    } finally {
      client.close();
      await daemon.close();
      podsApi.close();
      await podsApi.closed();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
