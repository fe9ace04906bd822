import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import {
  containersReadyCondition,
  initializedCondition,
  readyCondition,
} from "../../src/status/mod.ts";

const spec: JsonObject = {
  initContainers: [{ name: "init" }, { name: "proxy", restartPolicy: "Always" }],
  containers: [{ name: "app" }, { name: "web" }],
};

function status(name: string, state: JsonObject, flags: JsonObject = {}): JsonObject {
  return { name, state, lastState: {}, ready: false, started: false, ...flags };
}

const initDone = status("init", { terminated: { exitCode: 0 } }, { ready: true });
const proxyUp = status("proxy", { running: {} }, { ready: true, started: true });
const appUp = status("app", { running: {} }, { ready: true, started: true });
const webUp = status("web", { running: {} }, { ready: true, started: true });
const webWaiting = status("web", { waiting: {} });

Deno.test("initializedCondition() follows the kubelet's Initialized rules", async (t) => {
  const cases = [
    {
      rule: "a succeeded pod is initialized (PodCompleted)",
      init: [],
      regular: [],
      phase: "Succeeded",
      want: { type: "Initialized", status: "True", reason: "PodCompleted" },
    },
    {
      rule: "a started regular container means initialized",
      init: [],
      regular: [appUp],
      phase: "Running",
      want: { type: "Initialized", status: "True" },
    },
    {
      rule: "an init container not done and a sidecar not started are listed",
      init: [status("init", { running: {} }), status("proxy", { waiting: {} })],
      regular: [],
      phase: "Pending",
      want: {
        type: "Initialized",
        status: "False",
        reason: "ContainersNotInitialized",
        message: "containers with incomplete status: [init proxy]",
      },
    },
    {
      rule: "init containers done and sidecars started is initialized",
      init: [initDone, proxyUp],
      regular: [],
      phase: "Pending",
      want: { type: "Initialized", status: "True" },
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => {
      assert.deepEqual(
        initializedCondition(spec, { init: c.init, regular: c.regular }, c.phase),
        c.want,
      );
    });
  }
});

Deno.test("containersReadyCondition() follows the kubelet's ContainersReady rules", async (t) => {
  const cases = [
    {
      rule: "a succeeded pod is not ready (PodCompleted)",
      statuses: { init: [initDone, proxyUp], regular: [appUp, webUp] },
      phase: "Succeeded",
      want: { type: "ContainersReady", status: "False", reason: "PodCompleted" },
    },
    {
      rule: "a failed pod is not ready (PodFailed)",
      statuses: { init: [initDone, proxyUp], regular: [appUp, webUp] },
      phase: "Failed",
      want: { type: "ContainersReady", status: "False", reason: "PodFailed" },
    },
    {
      rule: "unknown container statuses are not ready",
      statuses: undefined,
      phase: "Pending",
      want: { type: "ContainersReady", status: "False", reason: "UnknownContainerStatuses" },
    },
    {
      rule: "unready sidecars and regular containers are listed, regular init ones are not",
      statuses: { init: [status("init", { running: {} })], regular: [appUp, webWaiting] },
      phase: "Running",
      want: {
        type: "ContainersReady",
        status: "False",
        reason: "ContainersNotReady",
        message: "containers with unready status: [proxy web]",
      },
    },
    {
      rule: "every sidecar and regular container ready is ready",
      statuses: { init: [initDone, proxyUp], regular: [appUp, webUp] },
      phase: "Running",
      want: { type: "ContainersReady", status: "True" },
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => {
      assert.deepEqual(containersReadyCondition(spec, c.statuses, c.phase), c.want);
    });
  }
});

Deno.test("readyCondition() adds the readiness gates to ContainersReady", async (t) => {
  const gated: JsonObject = { ...spec, readinessGates: [{ conditionType: "example.com/lb" }] };
  const ready = { type: "ContainersReady", status: "True" } as const;
  const cases = [
    {
      rule: "containers not ready: Ready copies ContainersReady",
      containersReady: { type: "ContainersReady", status: "False", reason: "PodFailed" } as const,
      others: [],
      want: { type: "Ready", status: "False", reason: "PodFailed" },
    },
    {
      rule: "a gate whose condition is missing keeps the pod unready",
      containersReady: ready,
      others: [],
      want: {
        type: "Ready",
        status: "False",
        reason: "ReadinessGatesNotReady",
        message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
      },
    },
    {
      rule: "a gate whose condition is False keeps the pod unready",
      containersReady: ready,
      others: [{ type: "example.com/lb", status: "False" }],
      want: {
        type: "Ready",
        status: "False",
        reason: "ReadinessGatesNotReady",
        message: 'the status of pod readiness gate "example.com/lb" is not "True", but False',
      },
    },
    {
      rule: "every gate True makes the pod ready",
      containersReady: ready,
      others: [{ type: "example.com/lb", status: "True" }],
      want: { type: "Ready", status: "True" },
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => {
      assert.deepEqual(readyCondition(gated, c.containersReady, c.others), c.want);
    });
  }
});
