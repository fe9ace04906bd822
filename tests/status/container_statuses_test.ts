import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import {
  type ContainerKind,
  containerReadiness,
  podContainerStatuses,
} from "../../src/status/mod.ts";

Deno.test("containerReadiness() says who is ready and started", async (t) => {
  const running = { running: {} };
  const cases: {
    rule: string;
    kind: ContainerKind;
    state: JsonObject;
    startupProbe?: boolean;
    readinessProbe?: boolean;
    probedStarted?: boolean;
    probedReady?: boolean;
    want: { ready: boolean; started: boolean };
  }[] = [
    {
      rule: "an init container is ready once it exited 0",
      kind: "init",
      state: { terminated: { exitCode: 0 } },
      want: { ready: true, started: false },
    },
    {
      rule: "a running init container is started, not ready",
      kind: "init",
      state: running,
      want: { ready: false, started: true },
    },
    {
      rule: "an ephemeral container is never ready",
      kind: "ephemeral",
      state: running,
      want: { ready: false, started: true },
    },
    {
      rule: "a running container without probes is started and ready",
      kind: "regular",
      state: running,
      want: { ready: true, started: true },
    },
    {
      rule: "a startup probe not yet passed: not started, not ready",
      kind: "regular",
      state: running,
      startupProbe: true,
      want: { ready: false, started: false },
    },
    {
      rule: "a readiness probe not yet passed: started, not ready",
      kind: "sidecar",
      state: running,
      readinessProbe: true,
      want: { ready: false, started: true },
    },
    {
      rule: "the prober's results win over the probes' defaults",
      kind: "regular",
      state: running,
      startupProbe: true,
      readinessProbe: true,
      probedStarted: true,
      probedReady: true,
      want: { ready: true, started: true },
    },
    {
      rule: "a container that is not running is neither",
      kind: "regular",
      state: { waiting: {} },
      probedStarted: true,
      probedReady: true,
      want: { ready: false, started: false },
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => assert.deepEqual(containerReadiness(c), c.want));
  }
});

Deno.test("podContainerStatuses() gives every container of the spec a status", async (t) => {
  const spec: JsonObject = {
    initContainers: [{ name: "init", image: "busybox" }],
    containers: [{ name: "web", image: "nginx" }, { name: "app", image: "app:1" }],
  };
  await t.step("containers the runtime lacks are waiting, behind init: PodInitializing", () => {
    const built = podContainerStatuses(spec, {}, undefined);
    assert.deepEqual(built.init.map((s) => s.state), [
      { waiting: { reason: "ContainerCreating" } },
    ]);
    assert.deepEqual(built.regular.map((s) => [s.name, s.state]), [
      ["app", { waiting: { reason: "PodInitializing" } }],
      ["web", { waiting: { reason: "PodInitializing" } }],
    ]);
  });
  await t.step("a terminated container the runtime removed stays terminated", () => {
    const done = { name: "init", state: { terminated: { exitCode: 0 } }, ready: true };
    const built = podContainerStatuses(spec, {}, { initContainerStatuses: [done] });
    assert.deepEqual(built.init[0], done);
  });
  await t.step("the runtime's state wins; probe results of the same instance stay", () => {
    const runtimeStatus = {
      containerStatuses: [{
        name: "app",
        state: { running: {} },
        containerID: "containerd://1",
        image: "app:1",
      }],
    };
    const sourceStatus = {
      containerStatuses: [{ name: "app", containerID: "containerd://1", ready: false }],
    };
    const app = podContainerStatuses(
      { containers: [{ name: "app", readinessProbe: {} }] },
      runtimeStatus,
      sourceStatus,
    ).regular[0]!;
    assert.deepEqual(app.state, { running: {} });
    assert.equal(app.started, true);
    assert.equal(app.ready, false);
  });
  await t.step("an empty image or imageID of the same instance is the runtime's", () => {
    const runtimeStatus = {
      containerStatuses: [{
        name: "app",
        state: { terminated: { exitCode: 137 } },
        containerID: "containerd://1",
        image: "registry.local/app:1",
        imageID: "sha256:0123",
      }],
    };
    const sourceStatus = {
      containerStatuses: [{
        name: "app",
        containerID: "containerd://1",
        image: "app:1",
        imageID: "",
        state: { running: {} },
      }],
    };
    const app = podContainerStatuses({ containers: [{ name: "app" }] }, runtimeStatus, sourceStatus)
      .regular[0]!;
    assert.equal(app.image, "app:1", "the source's image name of the same instance stays");
    assert.equal(app.imageID, "sha256:0123");
    const unnamed = podContainerStatuses(
      { containers: [{ name: "app" }] },
      runtimeStatus,
      { containerStatuses: [{ ...sourceStatus.containerStatuses[0]!, image: "" }] },
    ).regular[0]!;
    assert.equal(unnamed.image, "registry.local/app:1");
  });
});
