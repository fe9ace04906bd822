// PodMerger with the kubelet's Pods API as a source (DESIGN.md §16 "Merge").
import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import { type PodObject, type PodSnapshot, snapshotOf } from "../../src/model/pod.ts";
import { PodMerger } from "../../src/merge/mod.ts";
import { WEB_CONTAINER, WEB_UID, webRuntime as baseWebRuntime } from "./_runtime.ts";

const FIXTURE = new URL("../_fixtures/kubelet/pods.json", import.meta.url);
const KUBELET_PODS: PodObject[] = JSON.parse(Deno.readTextFileSync(FIXTURE)).items;

function kubeletWeb(): PodObject {
  const pod = KUBELET_PODS.find((p) => p.metadata.name.startsWith("web-"));
  assert.ok(pod);
  return structuredClone(pod);
}

function webRuntime(state: "running" | "exited" = "running"): PodSnapshot {
  if (state === "running") return baseWebRuntime();
  return baseWebRuntime([{
    name: "nginx",
    id: WEB_CONTAINER,
    state,
    created: "2026-03-01T10:00:04Z",
    started: "2026-03-01T10:00:05Z",
    exitCode: 1,
    finished: "2026-03-01T10:40:00Z",
  }]);
}

function find(view: readonly PodSnapshot[], uid: string): PodSnapshot | undefined {
  return view.find((s) => s.uid === uid);
}

function nginx(snapshot: PodSnapshot | undefined): JsonObject {
  const statuses = (snapshot?.pod.status as JsonObject).containerStatuses as JsonObject[];
  return statuses.find((c) => c.name === "nginx")!;
}

Deno.test("PodMerger serves the kubelet Pods API's pod as it is while the kubelet answers", () => {
  const merger = new PodMerger();
  const web = snapshotOf(kubeletWeb());
  merger.update("cri", [webRuntime("exited")]);
  const view = merger.update("kubelet-podsapi", [web]);
  // Spec, metadata and status: the kubelet's own word, even with the runtime a step ahead.
  assert.equal(find(view, WEB_UID)!.pod, web.pod, "the very same pod object");
  assert.equal(merger.update("cri", [webRuntime("running")]), view, "runtime changes do not count");
});

Deno.test("PodMerger prefers the kubelet Pods API's spec over kubelet /pods", () => {
  const merger = new PodMerger();
  const fromApi = kubeletWeb();
  fromApi.metadata.labels = { ...fromApi.metadata.labels, source: "pods-api" };
  merger.update("kubelet", [snapshotOf(kubeletWeb())]);
  const view = merger.update("kubelet-podsapi", [snapshotOf(fromApi)]);
  assert.equal(find(view, WEB_UID)!.pod.metadata.labels?.source, "pods-api");
});

Deno.test("PodMerger keeps the kubelet's last status while its API is down, until the runtime changes", () => {
  const merger = new PodMerger();
  const web = snapshotOf(kubeletWeb());
  const running = webRuntime("running");
  merger.update("cri", [running]);
  const live = merger.update("kubelet-podsapi", [web]);
  // The kubelet stops answering: nothing changed in the runtime, nothing changes.
  const down = merger.update("kubelet-podsapi", [web], true);
  assert.equal(find(down, WEB_UID)!.pod, find(live, WEB_UID)!.pod, "the same pod object");
  // The container dies while the kubelet is down: status rebuilt from the runtime.
  const died = merger.update("cri", [webRuntime("exited")]);
  const rebuilt = find(died, WEB_UID)!;
  assert.deepEqual(rebuilt.pod.spec, web.pod.spec, "spec still the kubelet's");
  const state = nginx(rebuilt).state as JsonObject;
  assert.ok(state.terminated, `terminated, got ${JSON.stringify(state)}`);
  assert.equal(
    (nginx(rebuilt).volumeMounts as unknown[]).length > 0,
    true,
    "fields only the kubelet knows stay",
  );
  // The kubelet comes back with its own status: its word again.
  const back = merger.update("kubelet-podsapi", [web]);
  assert.equal(find(back, WEB_UID)!.pod, web.pod);
});

Deno.test("PodMerger deletes a pod the kubelet Pods API deleted at once, while the runtime still has it", () => {
  const merger = new PodMerger();
  const web = snapshotOf(kubeletWeb());
  const runtime = webRuntime("running");
  merger.update("cri", [runtime]);
  assert.equal(merger.update("kubelet-podsapi", [web]).length, 1);
  const view = merger.update("kubelet-podsapi", []);
  assert.equal(find(view, WEB_UID), undefined, "gone at once");
  // The runtime tears it down slowly: it does not come back meanwhile.
  assert.equal(find(merger.update("cri", [webRuntime("exited")]), WEB_UID), undefined);
  assert.equal(merger.update("cri", []).length, 0);
  // Once the runtime forgot it, a runtime pod with that UID would be news again.
  assert.equal(find(merger.update("cri", [runtime]), WEB_UID), runtime);
});

Deno.test("PodMerger keeps a pod only the runtime has (the kubelet never listed it) as the runtime shows it", () => {
  const merger = new PodMerger();
  const orphan = webRuntime("running");
  merger.update("kubelet-podsapi", []);
  const view = merger.update("cri", [orphan]);
  assert.equal(find(view, WEB_UID), orphan);
  // The kubelet's API goes down and comes back without it: still the runtime's.
  merger.update("kubelet-podsapi", []);
  assert.equal(find(merger.current(), WEB_UID), orphan);
});

Deno.test("PodMerger keeps held kubelet pods that the runtime never ran (Pending) as the kubelet said", () => {
  const merger = new PodMerger();
  const web = snapshotOf(kubeletWeb());
  merger.update("cri", []);
  merger.update("kubelet-podsapi", [web]);
  const view = merger.update("kubelet-podsapi", [web], true);
  assert.equal(find(view, WEB_UID)!.pod, web.pod);
});
