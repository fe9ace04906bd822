import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { FakeClock } from "../../src/clock.ts";
import { SimulatedNode } from "../../src/sim/node/simulated_node.ts";
import { podProblems, QUANTITY_REGEXP } from "./_pod_validity.ts";

const NODE = { nodeName: "sim-node-1", hostIP: "10.0.0.10" };

function runningPod(): PodObject {
  const node = new SimulatedNode({ clock: new FakeClock(), pods: 30, seed: 11 });
  const pod = node.pods().find((p) =>
    p.status?.phase === "Running" && p.metadata.name.startsWith("checkout-api") &&
    (p.status.containerStatuses as JsonObject[]).every((c) => c.ready === true)
  );
  assert.ok(pod, "seed 11 has a ready checkout-api pod");
  return structuredClone(pod) as PodObject;
}

function containers(pod: PodObject, where: "spec" | "status"): JsonObject[] {
  return where === "spec"
    ? pod.spec!.containers as JsonObject[]
    : pod.status!.containerStatuses as JsonObject[];
}

Deno.test("podProblems() accepts a simulated pod", () => {
  assert.deepEqual(podProblems(runningPod(), NODE), []);
});

Deno.test("podProblems() reports broken pods", async (t) => {
  const cases: { name: string; breakIt: (pod: PodObject) => void; expect: RegExp }[] = [
    {
      name: "invalid quantity",
      breakIt: (p) => {
        (containers(p, "spec")[0]!.resources as JsonObject).requests = { cpu: "1.5 cores" };
      },
      expect: /not a quantity/,
    },
    {
      name: "time with fractions",
      breakIt: (p) => {
        p.status!.startTime = "2025-05-01T12:00:00.123Z";
      },
      expect: /startTime is not an RFC 3339 time/,
    },
    {
      name: "missing container status",
      breakIt: (p) => {
        containers(p, "status").pop();
      },
      expect: /do not match spec/,
    },
    {
      name: "empty phase",
      breakIt: (p) => {
        p.status!.phase = "";
      },
      expect: /phase "" is invalid/,
    },
    {
      name: "Succeeded while running",
      breakIt: (p) => {
        p.status!.phase = "Succeeded";
      },
      expect: /Succeeded pod has a container not terminated/,
    },
    {
      name: "uid not a UUID",
      breakIt: (p) => {
        p.metadata.uid = "abc";
      },
      expect: /not a v4 UUID/,
    },
    {
      name: "Ready condition lies",
      breakIt: (p) => {
        containers(p, "status")[0]!.ready = false;
      },
      expect: /Ready condition disagrees/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const pod = runningPod();
      c.breakIt(pod);
      const problems = podProblems(pod, NODE);
      assert.ok(problems.some((p) => c.expect.test(p)), problems.join("\n"));
    });
  }
});

Deno.test("QUANTITY_REGEXP follows the Kubernetes quantity grammar", () => {
  for (const ok of ["100m", "128Mi", "1", "1Gi", "0.5", "2e3", "25m", "32M", "1.5Gi", "+1"]) {
    assert.match(ok, QUANTITY_REGEXP);
  }
  for (const bad of ["", "1.5 cores", "Mi", "1mi", "1KiB", "--1", "1e"]) {
    assert.doesNotMatch(bad, QUANTITY_REGEXP);
  }
});
