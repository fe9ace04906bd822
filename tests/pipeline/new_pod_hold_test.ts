// A new pod that only the runtime shows waits for the kubelet's view, so
// watchers get one ADDED with its spec; a pod the kubelet does not have, or
// a kubelet that takes too long, ends the wait; nothing waits before the
// kubelet synced or without a runtime.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodSourceKind } from "../../src/model/pod_source_kind.ts";
import { PodPipeline } from "../../src/pipeline/mod.ts";
import { canonicalEncoder, makeSnapshot } from "../_fixtures/pods.ts";

function pipelineOf(sources: PodSourceKind[], holdMs = 2000) {
  const clock = new FakeClock();
  const asked: PodSourceKind[][] = [];
  const pipeline = new PodPipeline({
    sources,
    encode: canonicalEncoder,
    clock,
    metrics: createMetricsRegistry().metrics,
    log: silentLogger,
    history: { maxAgeMs: 60_000, maxEvents: 1000 },
    tombstoneTtlMs: 60_000,
    newPodHoldMs: holdMs,
    onNewPodWait: (kinds) => asked.push([...kinds]),
  });
  const events: Array<{ type: string; uid: string; restartPolicy: unknown }> = [];
  const sub = pipeline.hub.subscribe({ signal: new AbortController().signal });
  sub.markLive();
  // Everything published so far (apply publishes synchronously).
  const drain = async () => {
    while (sub.pending > 0) {
      const item = await sub.next();
      if (item.state !== "event") break;
      const pod = item.event.pod.pod;
      events.push({
        type: item.event.type,
        uid: item.event.pod.uid,
        restartPolicy: (pod.spec as { restartPolicy?: string }).restartPolicy,
      });
    }
    return events;
  };
  return { pipeline, clock, asked, drain };
}

/** The runtime's view of a pod: no restart policy (CRI has none). */
function runtimePod(uid: string) {
  return makeSnapshot({ uid, name: uid });
}

/** The kubelet's view: the spec. */
function kubeletPod(uid: string) {
  const s = makeSnapshot({ uid, name: uid });
  (s.pod.spec as Record<string, unknown>).restartPolicy = "Never";
  return s;
}

Deno.test("a new pod the runtime shows first is ADDED once, with the kubelet's spec", async () => {
  const { pipeline, asked, drain } = pipelineOf(["cri", "kubelet"]);
  pipeline.apply("kubelet", []);
  pipeline.apply("cri", []);
  pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(await drain(), [], "a waits for the kubelet");
  assert.deepEqual(asked, [["kubelet"]], "the kubelet is asked to read now");
  pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(asked, [["kubelet"]], "asked once");
  pipeline.apply("kubelet", [kubeletPod("a")]);
  assert.deepEqual(await drain(), [{ type: "ADDED", uid: "a", restartPolicy: "Never" }]);
});

Deno.test("a pod the kubelet does not have is announced after its next view, or after the hold", async () => {
  const { pipeline, clock, drain } = pipelineOf(["cri", "kubelet"]);
  pipeline.apply("kubelet", []);
  pipeline.apply("cri", [runtimePod("a")]);
  pipeline.apply("kubelet", []);
  assert.deepEqual(await drain(), [{ type: "ADDED", uid: "a", restartPolicy: undefined }]);
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b")]);
  clock.advance(1999);
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b")]);
  assert.equal((await drain()).length, 1, "b still waits");
  clock.advance(1);
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b")]);
  assert.deepEqual((await drain()).at(-1), { type: "ADDED", uid: "b", restartPolicy: undefined });
  // Gone before it was announced: never announced, and nothing left waiting.
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b"), runtimePod("c")]);
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b")]);
  clock.advance(5000);
  pipeline.apply("cri", [runtimePod("a"), runtimePod("b")]);
  assert.equal((await drain()).length, 2);
});

Deno.test("nothing waits before the kubelet synced, without a runtime, or with the hold off", async () => {
  const early = pipelineOf(["cri", "kubelet"]);
  early.pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(await early.drain(), [{ type: "ADDED", uid: "a", restartPolicy: undefined }]);
  const manifests = pipelineOf(["cri", "static"]);
  manifests.pipeline.apply("static", []);
  manifests.pipeline.apply("cri", [runtimePod("a")]);
  assert.equal((await manifests.drain()).length, 1, "a manifest directory does not have every pod");
  const off = pipelineOf(["cri", "kubelet"], 0);
  off.pipeline.apply("kubelet", []);
  off.pipeline.apply("cri", [runtimePod("a")]);
  assert.equal((await off.drain()).length, 1);
  const specOnly = pipelineOf(["kubelet"]);
  specOnly.pipeline.apply("kubelet", [kubeletPod("a")]);
  assert.equal((await specOnly.drain()).length, 1);
});

Deno.test("a new pod the runtime shows first waits for the API server source (a mirror pod comes later)", async () => {
  const { pipeline, asked, drain } = pipelineOf(["cri", "apiserver"]);
  pipeline.apply("apiserver", []);
  pipeline.apply("cri", []);
  pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(await drain(), [], "a waits for the API server");
  assert.deepEqual(asked, [["apiserver"]]);
  pipeline.apply("apiserver", [kubeletPod("a")]);
  assert.deepEqual(await drain(), [{ type: "ADDED", uid: "a", restartPolicy: "Never" }]);
});

Deno.test("a new pod waits for every spec source the node has, each one view, never the kubelet's Pods API", async () => {
  const { pipeline, asked, drain } = pipelineOf(["cri", "kubelet-podsapi", "apiserver", "kubelet"]);
  pipeline.apply("kubelet-podsapi", []);
  pipeline.apply("apiserver", []);
  pipeline.apply("kubelet", []);
  pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(asked, [["apiserver", "kubelet"]], "not the kubelet's Pods API");
  pipeline.apply("apiserver", []);
  assert.deepEqual(await drain(), [], "still waits for the kubelet's /pods");
  pipeline.apply("kubelet", [kubeletPod("a")]);
  assert.deepEqual(await drain(), [{ type: "ADDED", uid: "a", restartPolicy: "Never" }]);
});

Deno.test("with the kubelet's Pods API alone, a new pod the runtime shows is never held", async () => {
  // The kubelet sends a pod before its sandbox exists; a node without the API sends nothing.
  const { pipeline, asked, drain } = pipelineOf(["cri", "kubelet-podsapi"]);
  pipeline.apply("kubelet-podsapi", []);
  pipeline.apply("cri", [runtimePod("a")]);
  assert.deepEqual(await drain(), [{ type: "ADDED", uid: "a", restartPolicy: undefined }]);
  assert.deepEqual(asked, []);
});
