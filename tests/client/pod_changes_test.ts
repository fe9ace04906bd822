import assert from "node:assert/strict";
import { changedPaths, changeSummary } from "../../src/client/pod_changes.ts";
import type { PodObject } from "../../src/model/pod.ts";

const base: PodObject = {
  metadata: { uid: "u", name: "p", namespace: "d", labels: { app: "a" } },
  status: {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }, { type: "Initialized", status: "True" }],
    containerStatuses: [{ name: "web", restartCount: 0, state: { running: { startedAt: "t0" } } }],
  },
};

Deno.test("changedPaths() names what changed, matching list items by name or type", () => {
  const after = structuredClone(base);
  after.status!.phase = "Failed";
  (after.status!.containerStatuses as Array<Record<string, unknown>>)[0]!.restartCount = 1;
  after.status!.conditions = [{ type: "Initialized", status: "True" }, {
    type: "Ready",
    status: "False",
  }];
  after.metadata.labels = { app: "b" };
  assert.deepEqual(changedPaths(base, after), [
    "metadata.labels.app",
    "status.phase",
    "status.conditions[Ready].status",
    "status.containerStatuses[web].restartCount",
  ]);
  assert.deepEqual(changedPaths(base, structuredClone(base)), []);
});

Deno.test("changeSummary() names three paths and counts the rest", () => {
  assert.equal(changeSummary(["a", "b"]), "a,b");
  assert.equal(changeSummary(["a", "b", "c", "d", "e"]), "a,b,c +2");
  assert.equal(changeSummary([]), "");
});
