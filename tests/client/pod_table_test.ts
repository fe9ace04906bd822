import assert from "node:assert/strict";
import {
  alignColumns,
  formatAge,
  maskKeeps,
  podColumns,
  podRow,
  podStatusText,
} from "../../src/client/pod_table.ts";
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

Deno.test("podStatusText() follows kubectl's printPod rules", async (t) => {
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
    await t.step(name, () => assert.equal(podStatusText(p), want));
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

Deno.test("formatAge() matches apimachinery's HumanDuration", async (t) => {
  const s = 1000, m = 60 * s, h = 60 * m, d = 24 * h;
  const cases: Array<[number, string]> = [
    [-5 * s, "<invalid>"],
    [0, "0s"],
    [119 * s, "119s"],
    [2 * m, "2m"],
    [3 * m + 12 * s, "3m12s"],
    [45 * m, "45m"],
    [3 * h + 5 * m, "3h5m"],
    [5 * h, "5h"],
    [30 * h, "30h"],
    [2 * d + 3 * h, "2d3h"],
    [10 * d, "10d"],
    [800 * d, "2y70d"],
    [3000 * d, "8y"],
  ];
  for (const [ms, want] of cases) await t.step(want, () => assert.equal(formatAge(ms), want));
});

Deno.test("alignColumns() pads like kubectl's tab writer: three spaces, last column bare", () => {
  assert.deepEqual(alignColumns([["NAME", "STATUS"], ["a-long-name", "Running"]]), [
    "NAME          STATUS",
    "a-long-name   Running",
  ]);
});
