import assert from "node:assert/strict";
import { alignColumns, maskKeeps, podColumns, podRow } from "../../src/client/pod_table.ts";
import { printPod } from "../../src/kubeapi/mod.ts";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";

const NOW = Date.parse("2026-12-01T12:00:00Z");

function pod(
  status: JsonObject,
  spec: JsonObject = {},
  meta = {},
): PodObject {
  return {
    metadata: {
      uid: "u1",
      name: "web-0",
      namespace: "shop",
      creationTimestamp: "2026-12-01T11:00:00Z",
      ...meta,
    },
    spec: { containers: [{ name: "app" }], nodeName: "vm", ...spec },
    status,
  };
}

const running = { running: { startedAt: "2026-12-01T11:00:05Z" } };

Deno.test("printPod()'s STATUS column follows kubectl's rules", async (t) => {
  const cases: Array<[string, PodObject, string]> = [
    [
      "phase",
      pod({ phase: "Running", containerStatuses: [{ name: "app", ready: true, state: running }] }),
      "Running",
    ],
    [
      "waiting reason wins",
      pod({
        phase: "Running",
        containerStatuses: [{ name: "app", state: { waiting: { reason: "CrashLoopBackOff" } } }],
      }),
      "CrashLoopBackOff",
    ],
    [
      "terminated reason",
      pod({
        phase: "Succeeded",
        containerStatuses: [{
          name: "app",
          state: { terminated: { exitCode: 0, reason: "Completed" } },
        }],
      }),
      "Completed",
    ],
    [
      "exit code without reason",
      pod({
        phase: "Failed",
        containerStatuses: [{ name: "app", state: { terminated: { exitCode: 3 } } }],
      }),
      "ExitCode:3",
    ],
    [
      "signal without reason",
      pod({
        phase: "Failed",
        containerStatuses: [{ name: "app", state: { terminated: { exitCode: 137, signal: 9 } } }],
      }),
      "Signal:9",
    ],
    [
      "init container waiting",
      pod({
        phase: "Pending",
        initContainerStatuses: [{
          name: "init",
          state: { waiting: { reason: "ImagePullBackOff" } },
        }],
      }, { initContainers: [{ name: "init" }] }),
      "Init:ImagePullBackOff",
    ],
    [
      "init container running",
      pod({ phase: "Pending", initContainerStatuses: [{ name: "init", state: running }] }, {
        initContainers: [{ name: "init" }, { name: "two" }],
      }),
      "Init:0/2",
    ],
    [
      "init container failed",
      pod({
        phase: "Pending",
        initContainerStatuses: [{
          name: "init",
          state: { terminated: { exitCode: 1, reason: "Error" } },
        }],
      }, { initContainers: [{ name: "init" }] }),
      "Init:Error",
    ],
    ["pod reason", pod({ phase: "Failed", reason: "Evicted" }), "Evicted"],
    [
      "scheduling gated",
      pod({
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "False", reason: "SchedulingGated" }],
      }),
      "SchedulingGated",
    ],
    [
      "terminating",
      pod({ phase: "Running" }, {}, { deletionTimestamp: "2026-12-01T11:59:00Z" }),
      "Terminating",
    ],
    [
      "terminal phase is not terminating",
      pod({ phase: "Succeeded" }, {}, { deletionTimestamp: "2026-12-01T11:59:00Z" }),
      "Succeeded",
    ],
    [
      "completed but one still running",
      pod({
        phase: "Running",
        conditions: [{ type: "Ready", status: "False" }],
        containerStatuses: [{ name: "a", ready: true, state: running }, {
          name: "b",
          state: { terminated: { exitCode: 0, reason: "Completed" } },
        }],
      }, { containers: [{ name: "a" }, { name: "b" }] }),
      "NotReady",
    ],
  ];
  for (const [name, p, want] of cases) {
    await t.step(name, () => assert.equal(printPod(p, 0).cells[2], want));
  }
});

Deno.test("podRow() prints READY, RESTARTS with the last restart's age, AGE, and the wide columns", () => {
  const p = pod({
    phase: "Running",
    podIPs: [{ ip: "10.1.0.7" }, { ip: "fd00::7" }],
    containerStatuses: [{
      name: "app",
      ready: true,
      restartCount: 2,
      state: running,
      lastState: { terminated: { exitCode: 1, finishedAt: "2026-12-01T11:55:00Z" } },
    }],
  }, { containers: [{ name: "app" }, { name: "sidecar" }] });
  const columns = podColumns({
    namespace: true,
    wide: true,
    labelColumns: ["app"],
    showLabels: true,
  });
  assert.deepEqual(columns.map((c) => c.header), [
    "NAMESPACE",
    "NAME",
    "READY",
    "STATUS",
    "RESTARTS",
    "AGE",
    "IP",
    "NODE",
    "NOMINATED NODE",
    "READINESS GATES",
    "APP",
    "LABELS",
  ]);
  assert.deepEqual(podRow(p, columns, NOW), [
    "shop",
    "web-0",
    "1/2",
    "Running",
    "2 (5m ago)",
    "60m",
    "10.1.0.7",
    "vm",
    "<none>",
    "<none>",
    "",
    "<none>",
  ]);
});

Deno.test("podRow() prints - for every column a field mask removed", () => {
  const p: PodObject = {
    metadata: { uid: "u1", name: "web-0", namespace: "shop" },
    status: { phase: "Running" },
  };
  const columns = podColumns({ namespace: true, wide: true });
  assert.deepEqual(podRow(p, columns, NOW, ["status.phase"]), [
    "shop",
    "web-0",
    "-",
    "Running",
    "-",
    "-",
    "-",
    "-",
    "-",
    "-",
  ]);
  assert.equal(maskKeeps(["status"], "status.phase"), true);
  assert.equal(maskKeeps(["spec.containers.name"], "spec.containers"), true);
  assert.equal(maskKeeps(["metadata.labels"], "status.phase"), false);
  assert.equal(maskKeeps([], "anything"), true);
});

Deno.test("alignColumns() pads like kubectl's tab writer: three spaces, last column bare", () => {
  assert.deepEqual(alignColumns([["NAME", "STATUS"], ["a-long-name", "Running"]]), [
    "NAME          STATUS",
    "a-long-name   Running",
  ]);
});
