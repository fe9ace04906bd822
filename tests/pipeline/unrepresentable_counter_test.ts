import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { UnrepresentableCounter } from "../../src/pipeline/unrepresentable_counter.ts";
import { makePod } from "../_fixtures/pods.ts";

function counted(metrics: ReturnType<typeof createMetricsRegistry>["metrics"], source: string) {
  return metrics.sourceFieldsUnrepresentable.get().then((m) =>
    m.values.find((v) => v.labels.source === source)?.value ?? 0
  );
}

Deno.test("UnrepresentableCounter.check() counts what the schema cannot carry, once per pod object", async () => {
  const { metrics } = createMetricsRegistry();
  const counter = new UnrepresentableCounter({ metrics, log: silentLogger });
  const plain: PodSnapshot = { uid: "a", pod: makePod({ uid: "a", name: "a" }) };
  const odd = makePod({ uid: "b", name: "b" });
  odd.spec = { ...odd.spec, futureField: { enabled: true } };
  odd.status = { ...odd.status, phase: 7 };
  const strange: PodSnapshot = { uid: "b", pod: odd };

  assert.equal(counter.check("kubelet", [plain, strange]), 2);
  assert.equal(await counted(metrics, "kubelet"), 2);
  assert.equal(counter.check("kubelet", [plain, strange]), 0, "the same objects again");
  assert.equal(await counted(metrics, "kubelet"), 2);
  const changed: PodSnapshot = { uid: "b", pod: { ...odd } };
  assert.equal(counter.check("static", [changed]), 2, "a new object is checked");
  assert.equal(await counted(metrics, "static"), 2);
});
