import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { humanDuration, printPod } from "../../src/kubeapi/mod.ts";

const NOW = Date.parse("2026-01-02T00:00:00Z");

function pod(spec: JsonObject, status: JsonObject, deletionTimestamp?: string): PodObject {
  return {
    metadata: {
      uid: "u",
      name: "p",
      namespace: "d",
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
    },
    spec,
    status,
  };
}

const one = { containers: [{ name: "app" }] };
const running = { running: { startedAt: "2026-01-01T00:00:00Z" } };

Deno.test("humanDuration() formats as Go's duration.HumanDuration", async (t) => {
  const cases: Array<[number, string]> = [
    [-5_000, "<invalid>"],
    [-500, "0s"],
    [0, "0s"],
    [119_000, "119s"],
    [125_000, "2m5s"],
    [192_000, "3m12s"],
    [45 * 60_000, "45m"],
    [600_000, "10m"],
    [3 * 3600_000 + 5 * 60_000, "3h5m"],
    [20 * 3600_000, "20h"],
    [3 * 86_400_000 + 2 * 3600_000, "3d2h"],
    [100 * 86_400_000, "100d"],
    [800 * 86_400_000, "2y70d"],
    [3 * 365 * 86_400_000 + 10 * 86_400_000, "3y10d"],
    [10 * 365 * 86_400_000, "10y"],
  ];
  for (const [ms, text] of cases) await t.step(text, () => assert.equal(humanDuration(ms), text));
});

Deno.test("printPod() computes STATUS, READY and RESTARTS as kubectl's printer", async (t) => {
  const cases: Array<[string, PodObject, string[]]> = [
    [
      "running and ready",
      pod(one, {
        phase: "Running",
        containerStatuses: [{ name: "app", ready: true, restartCount: 0, state: running }],
      }),
      ["1/1", "Running", "0"],
    ],
    [
      "crash loop with last restart time",
      pod(one, {
        phase: "Running",
        containerStatuses: [{
          name: "app",
          ready: false,
          restartCount: 3,
          state: { waiting: { reason: "CrashLoopBackOff" } },
          lastState: { terminated: { exitCode: 1, finishedAt: "2026-01-01T23:58:00Z" } },
        }],
      }),
      ["0/1", "CrashLoopBackOff", "3 (2m ago)"],
    ],
    [
      "init container waiting",
      pod({ ...one, initContainers: [{ name: "a" }, { name: "b" }] }, {
        phase: "Pending",
        initContainerStatuses: [
          { name: "a", state: { terminated: { exitCode: 0 } } },
          { name: "b", state: { waiting: { reason: "PodInitializing" } } },
        ],
      }),
      ["0/1", "Init:1/2", "0"],
    ],
    [
      "init container failed without reason",
      pod({ ...one, initContainers: [{ name: "a" }] }, {
        phase: "Pending",
        initContainerStatuses: [{ name: "a", state: { terminated: { exitCode: 2 } } }],
      }),
      ["0/1", "Init:ExitCode:2", "0"],
    ],
    [
      "init container image pull",
      pod({ ...one, initContainers: [{ name: "a" }] }, {
        phase: "Pending",
        initContainerStatuses: [{ name: "a", state: { waiting: { reason: "ErrImagePull" } } }],
      }),
      ["0/1", "Init:ErrImagePull", "0"],
    ],
    [
      "started sidecar counts as ready container",
      pod({
        ...one,
        initContainers: [{ name: "proxy", restartPolicy: "Always" }],
      }, {
        phase: "Running",
        initContainerStatuses: [{ name: "proxy", started: true, ready: true, state: running }],
        containerStatuses: [{ name: "app", ready: true, state: running }],
        conditions: [{ type: "Initialized", status: "True" }],
      }),
      ["2/2", "Running", "0"],
    ],
    [
      "signal",
      pod(one, {
        phase: "Running",
        containerStatuses: [{ name: "app", state: { terminated: { exitCode: 0, signal: 9 } } }],
      }),
      ["0/1", "Signal:9", "0"],
    ],
    [
      "completed container but another running, pod not ready",
      pod(
        { containers: [{ name: "a" }, { name: "b" }] },
        {
          phase: "Running",
          containerStatuses: [
            {
              name: "a",
              ready: false,
              state: { terminated: { exitCode: 0, reason: "Completed" } },
            },
            { name: "b", ready: true, state: running },
          ],
        },
      ),
      ["1/2", "NotReady", "0"],
    ],
    [
      "terminating",
      pod(one, {
        phase: "Running",
        containerStatuses: [{ name: "app", ready: true, state: running }],
      }, "2026-01-01T12:00:00Z"),
      ["1/1", "Terminating", "0"],
    ],
    [
      "deleted after success stays Completed",
      pod(one, {
        phase: "Succeeded",
        containerStatuses: [{
          name: "app",
          state: { terminated: { exitCode: 0, reason: "Completed" } },
        }],
      }, "2026-01-01T12:00:00Z"),
      ["0/1", "Completed", "0"],
    ],
    ["evicted", pod(one, { phase: "Failed", reason: "Evicted" }), ["0/1", "Evicted", "0"]],
    [
      "scheduling gated",
      pod(one, {
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "False", reason: "SchedulingGated" }],
      }),
      ["0/1", "SchedulingGated", "0"],
    ],
  ];
  for (const [name, p, expected] of cases) {
    await t.step(name, () => assert.deepEqual(printPod(p, NOW).cells.slice(1, 4), expected));
  }
});

Deno.test("printPod() fills the wide columns and marks finished pods Completed", () => {
  const p = pod({ ...one, nodeName: "n1", readinessGates: [{ conditionType: "x/ready" }] }, {
    phase: "Succeeded",
    podIPs: [{ ip: "fd00::1" }, { ip: "10.0.0.1" }],
    nominatedNodeName: "n2",
    conditions: [{ type: "x/ready", status: "True" }],
  });
  const row = printPod(p, NOW);
  assert.deepEqual(row.cells.slice(4), ["24h", "fd00::1", "n1", "n2", "1/1"]);
  assert.equal(row.conditions?.[0]?.type, "Completed");
});
