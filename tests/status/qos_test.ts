import assert from "node:assert/strict";
import type { JsonObject } from "../../src/model/json.ts";
import { qosClassOf } from "../../src/status/mod.ts";

function container(requests?: JsonObject, limits?: JsonObject): JsonObject {
  const resources: JsonObject = {};
  if (requests !== undefined) resources.requests = requests;
  if (limits !== undefined) resources.limits = limits;
  return { name: "c", resources };
}

Deno.test("qosClassOf() classifies a pod by its requests and limits", async (t) => {
  const both = { cpu: "1", memory: "1Gi" };
  const cases = [
    { rule: "no requests or limits is BestEffort", containers: [container()], qos: "BestEffort" },
    {
      rule: "resources other than CPU and memory do not count",
      containers: [container({ "ephemeral-storage": "1Gi" })],
      qos: "BestEffort",
    },
    {
      rule: "CPU and memory limits on every container is Guaranteed",
      containers: [container(undefined, both)],
      qos: "Guaranteed",
    },
    {
      rule: "requests equal to limits stay Guaranteed",
      containers: [container(both, both)],
      qos: "Guaranteed",
    },
    {
      rule: "a request below its limit is Burstable",
      containers: [container({ cpu: "500m" }, both)],
      qos: "Burstable",
    },
    {
      rule: "a missing memory limit is Burstable",
      containers: [container(undefined, { cpu: "1" })],
      qos: "Burstable",
    },
    {
      rule: "one container without limits makes the pod Burstable",
      containers: [container(undefined, both), container()],
      qos: "Burstable",
    },
  ];
  for (const c of cases) {
    await t.step(c.rule, () => assert.equal(qosClassOf({ containers: c.containers }), c.qos));
  }
  await t.step("init containers count", () => {
    const spec = { initContainers: [container()], containers: [container(undefined, both)] };
    assert.equal(qosClassOf(spec), "Burstable");
  });
});
