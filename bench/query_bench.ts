/**
 * The query engine against the kubelet-shaped handlers on the same 1000
 * simulated pods, measured in the same run (BENCHMARKS.md, "Query engine"):
 *
 * - a selected PodQuery List vs the unselected ListPods, on an unchanged
 *   cache (both answer from memory) and right after a change (both rebuild);
 * - PodQuery Get by container ID, by IP and by name vs GetPod by UID;
 * - a PodQuery Watch resumed from a token 10 changes back vs a WatchPods
 *   that sends its initial list;
 * - index, log and tombstone upkeep on a relist that changes 10% of the pods,
 *   vs the cache's own work on that relist.
 *
 * Handlers are called as plain async functions, no socket: what is measured
 * is the daemon's CPU per request, not the transport's.
 *
 * @module
 */

import { PodCache } from "../src/cache/mod.ts";
import type { PodEvent } from "../src/cache/types.ts";
import { EventHub } from "../src/events/mod.ts";
import { FieldMaskCache } from "../src/fieldmask/mod.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import type { PodObject } from "../src/model/pod.ts";
import {
  encodeGetPodRequest,
  encodeGetRequest,
  encodeListRequest,
  encodePod,
  encodeWatchRequest,
  POD_SCHEMA,
} from "../src/proto/mod.ts";
import { QueryEngine } from "../src/query/mod.ts";
import { TokenBucket } from "../src/ratelimit/mod.ts";
import { systemClock } from "../src/clock.ts";
import type { CallContext, WatchSink } from "../src/server/call_context.ts";
import { PodQueryService } from "../src/server/pod_query_service.ts";
import { PodsService } from "../src/server/pods_service.ts";
import { ServingCore } from "../src/serving/mod.ts";
import { SimulatedNode } from "../src/sim/mod.ts";
import { relistFixture } from "./_relist_fixture.ts";

const T0 = 1_767_225_600_000;
const clock = { ...systemClock, now: () => T0 };
const metrics = createMetricsRegistry().metrics;

function containerId(i: number): string {
  return (i.toString(16).padStart(8, "0") + "c0ffee").repeat(5).slice(0, 64);
}

/** 1000 simulated pods, each with a container ID of its own. */
const PODS: PodObject[] = new SimulatedNode({ clock, pods: 1000, seed: 1 }).pods().map((pod, i) => {
  const status = { ...pod.status };
  const statuses = Array.isArray(status.containerStatuses) ? status.containerStatuses : [];
  status.containerStatuses = statuses.map((cs, j) =>
    typeof cs === "object" && cs !== null && !Array.isArray(cs)
      ? { ...cs, containerID: `containerd://${containerId(i * 8 + j)}` }
      : cs
  );
  status.podIP = `10.${(i >> 8) & 255}.${i & 255}.7`;
  status.podIPs = [{ ip: status.podIP }];
  return { ...pod, spec: { ...pod.spec, hostNetwork: false }, status };
});

/** The daemon's read side over a cache, with both services. */
function daemon() {
  const cache = new PodCache({ encode: encodePod, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const engine = new QueryEngine({
    store: cache,
    hub,
    clock,
    history: { maxAgeMs: 300_000, maxEvents: 10_000 },
    tombstoneTtlMs: 300_000,
  });
  const apply = (pods: readonly PodObject[]): PodEvent[] => {
    const events = cache.apply(pods.map((pod) => ({ uid: pod.metadata.uid, pod })));
    engine.apply(events);
    hub.publish(events);
    return events;
  };
  const shutdown = new AbortController().signal;
  const masks = new FieldMaskCache(POD_SCHEMA);
  // Real buckets that never run dry: admission costs what it costs in the daemon.
  const unlimited = new TokenBucket({ qps: 1e12, burst: 1e9, clock: systemClock });
  const core = new ServingCore({
    engine,
    gate: { isOpen: true },
    limiter: unlimited,
    connectionLimit: { qps: 1e12, burst: 1e9 },
    clock: systemClock,
    metrics,
    shutdown,
  });
  const pods = new PodsService({ core, masks, encode: encodePod });
  const query = new PodQueryService({ core, masks, encode: encodePod });
  apply(PODS);
  return { cache, engine, apply, pods, query };
}

function context(apiVersion: CallContext["apiVersion"], signal: AbortSignal): CallContext {
  return { apiVersion, connection: CONNECTION, signal, metadata: () => [] };
}

const CONNECTION = {};
const NEVER = new AbortController().signal;

/** A pod changed to a new version: one label bumped. */
function bump(pod: PodObject, gen: number): PodObject {
  return {
    ...pod,
    metadata: { ...pod.metadata, labels: { ...pod.metadata.labels, gen: String(gen) } },
  };
}

// ---- List -----------------------------------------------------------------

const NAMESPACE = PODS[0]!.metadata.namespace;
const APP = PODS[0]!.metadata.labels?.app ?? "";
const SELECTED = encodeListRequest({
  selector: {
    namespace: NAMESPACE,
    labelSelector: `app=${APP}`,
    fieldSelector: "status.phase=Running",
  },
});
const SELECTED_LABEL = encodeListRequest({ selector: { labelSelector: "app" } });

{
  const d = daemon();
  Deno.bench({
    group: "list 1000 pods, unchanged cache",
    name: "ListPods (all pods)",
    baseline: true,
    async fn() {
      await d.pods.listPods(context("v1alpha1", NEVER));
    },
  });
  Deno.bench({
    group: "list 1000 pods, unchanged cache",
    name: "PodQuery List (namespace + label + field selector)",
    async fn() {
      await d.query.list(SELECTED, context("podsapi_v1", NEVER));
    },
  });
}

{
  const d = daemon();
  let gen = 0;
  Deno.bench({
    group: "list 1000 pods, after one pod changed",
    name: "ListPods (all pods)",
    baseline: true,
    async fn(b) {
      d.apply(PODS.map((p, i) => (i === 0 ? bump(p, ++gen) : p)));
      b.start();
      await d.pods.listPods(context("v1alpha1", NEVER));
      b.end();
    },
  });
  Deno.bench({
    group: "list 1000 pods, after one pod changed",
    name: "PodQuery List (namespace + label + field selector)",
    async fn(b) {
      d.apply(PODS.map((p, i) => (i === 0 ? bump(p, ++gen) : p)));
      b.start();
      await d.query.list(SELECTED, context("podsapi_v1", NEVER));
      b.end();
    },
  });
  Deno.bench({
    group: "list 1000 pods, after one pod changed",
    name: "PodQuery List (label selector matching every pod)",
    async fn(b) {
      d.apply(PODS.map((p, i) => (i === 0 ? bump(p, ++gen) : p)));
      b.start();
      await d.query.list(SELECTED_LABEL, context("podsapi_v1", NEVER));
      b.end();
    },
  });
}

// ---- Get ------------------------------------------------------------------

{
  const d = daemon();
  const target = PODS[617]!;
  const byUid = encodeGetPodRequest(target.metadata.uid);
  const cases: Array<[string, Uint8Array]> = [
    [
      "PodQuery Get by container ID",
      encodeGetRequest({ key: { kind: "containerId", id: containerId(617 * 8) } }),
    ],
    [
      "PodQuery Get by container ID prefix (12)",
      encodeGetRequest({ key: { kind: "containerId", id: containerId(617 * 8).slice(0, 12) } }),
    ],
    [
      "PodQuery Get by pod IP",
      encodeGetRequest({ key: { kind: "podIp", ip: String(target.status!.podIP) } }),
    ],
    [
      "PodQuery Get by namespace/name",
      encodeGetRequest({
        key: { kind: "name", namespace: target.metadata.namespace, name: target.metadata.name },
      }),
    ],
  ];
  Deno.bench({
    group: "get 1 of 1000 pods, unchanged cache",
    name: "GetPod by UID",
    baseline: true,
    async fn() {
      await d.pods.getPod(byUid, context("v1alpha1", NEVER));
    },
  });
  for (const [name, request] of cases) {
    Deno.bench({
      group: "get 1 of 1000 pods, unchanged cache",
      name,
      async fn() {
        await d.query.get(request, context("podsapi_v1", NEVER));
      },
    });
  }
  // Another pod changes before every call: nothing is answered from memory.
  let gen = 0;
  const churn = () => d.apply(PODS.map((p, i) => (i === 1 ? bump(p, ++gen) : p)));
  Deno.bench({
    group: "get 1 of 1000 pods, after another pod changed",
    name: "GetPod by UID",
    baseline: true,
    async fn(b) {
      churn();
      b.start();
      await d.pods.getPod(byUid, context("v1alpha1", NEVER));
      b.end();
    },
  });
  for (const [name, request] of cases) {
    Deno.bench({
      group: "get 1 of 1000 pods, after another pod changed",
      name,
      async fn(b) {
        churn();
        b.start();
        await d.query.get(request, context("podsapi_v1", NEVER));
        b.end();
      },
    });
  }
}

// ---- Watch ----------------------------------------------------------------

/** A sink that ends the watch after `frames` frames. */
function sink(frames: number, controller: AbortController): WatchSink {
  let n = 0;
  return {
    sendAll(batch) {
      n += batch.length;
      if (n >= frames) controller.abort();
      return undefined;
    },
  };
}

{
  const d = daemon();
  let gen = 0;
  // Ten changes after the token: the resumed watch sends exactly those.
  const token = d.engine.token(d.engine.position);
  for (let i = 0; i < 10; i++) d.apply(PODS.map((p, j) => (j === i ? bump(p, ++gen) : p)));
  const resume = encodeWatchRequest({ resumeToken: token });
  Deno.bench({
    group: "watch 1000 pods",
    name: "WatchPods (initial list + INITIAL_SYNC_COMPLETE)",
    baseline: true,
    async fn() {
      const controller = new AbortController();
      await d.pods.watchPods(context("v1alpha1", controller.signal), sink(1001, controller))
        .catch(() => {});
    },
  });
  Deno.bench({
    group: "watch 1000 pods",
    name: "PodQuery Watch resumed 10 changes back",
    async fn() {
      const controller = new AbortController();
      await d.query.watch(resume, context("podsapi_v1", controller.signal), sink(10, controller))
        .catch(() => {});
    },
  });
}

// ---- Index upkeep on a relist ---------------------------------------------

/**
 * A relist as the daemon runs it (bench/relist_bench.ts's CRI fixture):
 * CRI source list, merge, cache apply, hub publish; with and without the
 * query engine's upkeep.
 */
{
  const { hub, engine, change, relist } = await relistFixture(clock, metrics);
  Deno.bench({
    group: "relist changing 10% of 1000 pods",
    name: "CRI list + merge + cache apply + hub publish",
    baseline: true,
    async fn(b) {
      change();
      b.start();
      hub.publish(await relist());
      b.end();
    },
  });
  Deno.bench({
    group: "relist changing 10% of 1000 pods",
    name: "the same + query engine upkeep",
    async fn(b) {
      change();
      b.start();
      const events = await relist();
      engine.apply(events);
      hub.publish(events);
      b.end();
    },
  });
  // The upkeep alone, on events of real relists built beforehand: timed
  // right after a relist it would also pay for the relist's garbage.
  const batches: PodEvent[][] = [];
  for (let i = 0; i < 20; i++) {
    change();
    const events = await relist();
    engine.apply(events);
    batches.push(events);
  }
  let k = 0;
  Deno.bench({
    group: "relist changing 10% of 1000 pods",
    name: "query engine upkeep alone (one relist's 100 events)",
    fn() {
      engine.apply(batches[k++ % batches.length]!);
    },
  });
}
