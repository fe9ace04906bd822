import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import {
  isTerminalPhase,
  phaseFromStatuses,
  podPhaseOf,
  type RestartPolicy,
} from "../../src/status/mod.ts";

const running = { running: {} };
const waiting = { waiting: { reason: "ContainerCreating" } };
const exited = (exitCode: number) => ({ terminated: { exitCode } });

function cs(name: string, state: JsonObject, extra: JsonObject = {}): JsonObject {
  return { name, state, lastState: {}, ...extra };
}

Deno.test("podPhaseOf() derives the phase as the kubelet's getPhase", async (t) => {
  const app = { name: "app" };
  const init = { name: "init" };
  const sidecar = { name: "proxy", restartPolicy: "Always" };
  const cases: {
    rule: string;
    policy?: RestartPolicy;
    inits?: JsonObject[];
    statuses: JsonObject[];
    initialized?: boolean;
    terminal?: boolean;
    phase: string;
  }[] = [
    { rule: "a container with no status leaves the pod Pending", statuses: [], phase: "Pending" },
    {
      rule: "a waiting container keeps the pod Pending",
      statuses: [cs("app", waiting)],
      phase: "Pending",
    },
    {
      rule: "every container running makes the pod Running",
      statuses: [cs("app", running)],
      phase: "Running",
    },
    {
      rule: "a regular init container not yet done keeps the pod Pending",
      inits: [init],
      statuses: [cs("init", running), cs("app", waiting)],
      phase: "Pending",
    },
    {
      rule: "a failed init container fails the pod under Never",
      policy: "Never",
      inits: [init],
      statuses: [cs("init", exited(1)), cs("app", waiting)],
      phase: "Failed",
    },
    {
      rule: "a failed init container is retried under OnFailure",
      policy: "OnFailure",
      inits: [init],
      statuses: [cs("init", exited(1)), cs("app", waiting)],
      phase: "Pending",
    },
    {
      rule: "a sidecar not yet started keeps an uninitialized pod Pending",
      inits: [sidecar],
      statuses: [cs("proxy", running, { started: false }), cs("app", running)],
      phase: "Pending",
    },
    {
      rule: "a restarting sidecar does not move an initialized pod back to Pending",
      inits: [sidecar],
      statuses: [cs("proxy", running, { started: false }), cs("app", running)],
      initialized: true,
      phase: "Running",
    },
    {
      rule: "stopped containers keep the pod Running under Always",
      statuses: [cs("app", exited(0))],
      phase: "Running",
    },
    {
      rule: "all containers succeeded makes the pod Succeeded under OnFailure",
      policy: "OnFailure",
      statuses: [cs("app", exited(0))],
      phase: "Succeeded",
    },
    {
      rule: "a failed container fails the pod under Never",
      policy: "Never",
      statuses: [cs("app", exited(2))],
      phase: "Failed",
    },
    {
      rule: "a terminal pod is Succeeded or Failed whatever its policy",
      statuses: [cs("app", exited(0))],
      terminal: true,
      phase: "Succeeded",
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => {
      const spec: JsonObject = { containers: [app], initContainers: c.inits ?? [] };
      if (c.policy !== undefined) spec.restartPolicy = c.policy;
      assert.equal(
        podPhaseOf({
          spec,
          statuses: c.statuses,
          podHasInitialized: c.initialized ?? false,
          podIsTerminal: c.terminal ?? false,
        }),
        c.phase,
      );
    });
  }
});

Deno.test("isTerminalPhase() is true only for Succeeded and Failed", async (t) => {
  const cases = [
    { phase: "Succeeded", terminal: true },
    { phase: "Failed", terminal: true },
    { phase: "Running", terminal: false },
    { phase: "Pending", terminal: false },
    { phase: "Unknown", terminal: false },
    { phase: undefined, terminal: false },
  ];
  for (const c of cases) {
    await t.step(String(c.phase), () => assert.equal(isTerminalPhase(c.phase), c.terminal));
  }
});

Deno.test("phaseFromStatuses() follows getPhase for each restart policy", async (t) => {
  const running = { name: "a", state: { running: {} }, lastState: {} };
  const ok = { name: "b", state: { terminated: { exitCode: 0 } }, lastState: {} };
  const failed = { name: "c", state: { terminated: { exitCode: 1 } }, lastState: {} };
  const waiting = { name: "d", state: { waiting: {} }, lastState: {} };
  const restarting = {
    name: "e",
    state: { waiting: {} },
    lastState: { terminated: { exitCode: 1 } },
  };
  const cases: {
    name: string;
    init?: JsonObject[];
    containers: JsonObject[];
    policy?: "Always" | "OnFailure" | "Never";
    terminal?: boolean;
    phase: string;
  }[] = [
    { name: "all running", containers: [running], phase: "Running" },
    { name: "one waiting", containers: [running, waiting], phase: "Pending" },
    { name: "all stopped, Always", containers: [ok, failed], phase: "Running" },
    { name: "all succeeded, Never", containers: [ok], policy: "Never", phase: "Succeeded" },
    { name: "one failed, Never", containers: [ok, failed], policy: "Never", phase: "Failed" },
    { name: "one failed, OnFailure", containers: [failed], policy: "OnFailure", phase: "Running" },
    { name: "all succeeded, OnFailure", containers: [ok], policy: "OnFailure", phase: "Succeeded" },
    { name: "restarting counts as stopped", containers: [restarting], phase: "Running" },
    { name: "terminal pod, a failure", containers: [ok, failed], terminal: true, phase: "Failed" },
    { name: "terminal pod, all ok", containers: [ok], terminal: true, phase: "Succeeded" },
    { name: "init running", init: [running], containers: [], phase: "Pending" },
    {
      name: "init failed, Never",
      init: [failed],
      containers: [],
      policy: "Never",
      phase: "Failed",
    },
    { name: "nothing known", containers: [], phase: "Pending" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.equal(
        phaseFromStatuses({
          initContainerStatuses: c.init ?? [],
          containerStatuses: c.containers,
          restartPolicy: c.policy,
          podIsTerminal: c.terminal,
        }),
        c.phase,
      );
    });
  }
});
