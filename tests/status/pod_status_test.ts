import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import { overlayStatus, pendingStatus } from "../../src/status/mod.ts";

function conditions(status: JsonObject): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const c of status.conditions as JsonObject[]) out[c.type as string] = c;
  return out;
}

Deno.test("pendingStatus() is the status of a pod admitted but not yet run", async (t) => {
  const status = pendingStatus(
    { containers: [{ name: "app", image: "nginx" }] },
    { extra: { qosClass: "BestEffort" }, since: "2026-01-01T00:00:00Z" },
  );
  await t.step("the phase is Pending", () => assert.equal(status.phase, "Pending"));
  await t.step("the extra fields are kept", () => assert.equal(status.qosClass, "BestEffort"));
  await t.step("the five kubelet conditions, sandbox not ready, pod scheduled", () => {
    const c = conditions(status);
    assert.deepEqual(Object.keys(c), [
      "PodReadyToStartContainers",
      "Initialized",
      "Ready",
      "ContainersReady",
      "PodScheduled",
    ]);
    assert.equal(c.PodReadyToStartContainers?.status, "False");
    assert.equal(c.Ready?.reason, "ContainersNotReady");
    assert.equal(c.PodScheduled?.status, "True");
    assert.equal(c.Initialized?.lastTransitionTime, "2026-01-01T00:00:00Z");
  });
});

Deno.test("overlayStatus() applies the kubelet's rules to the runtime's view", async (t) => {
  const spec = { restartPolicy: "Never", containers: [{ name: "job", image: "busybox" }] };
  const runtimeStatus = {
    containerStatuses: [{
      name: "job",
      state: { terminated: { exitCode: 0, reason: "Completed" } },
      containerID: "containerd://abc",
    }],
  };
  await t.step("the phase follows the real restart policy", () => {
    const status = overlayStatus({ spec, sourceStatus: { phase: "Running" }, runtimeStatus });
    assert.equal(status.phase, "Succeeded");
    assert.equal(conditions(status).Initialized?.reason, "PodCompleted");
  });
  await t.step("a terminal phase the source reported is final", () => {
    const status = overlayStatus({
      spec: { containers: [{ name: "job" }] },
      sourceStatus: { phase: "Failed" },
      runtimeStatus: { containerStatuses: [{ name: "job", state: { running: {} } }] },
    });
    assert.equal(status.phase, "Failed");
  });
  await t.step("fields the runtime lacks come from the source", () => {
    const status = overlayStatus({
      spec,
      sourceStatus: { phase: "Running", qosClass: "BestEffort" },
      runtimeStatus,
    });
    assert.equal(status.qosClass, "BestEffort");
  });
});
