import assert from "node:assert/strict";
import { compilePodFilter, SelectorError } from "../../src/client/pod_filter.ts";
import type { PodObject } from "../../src/model/pod.ts";

const pods: PodObject[] = [
  {
    metadata: { uid: "1", name: "web", namespace: "shop", labels: { app: "web", tier: "front" } },
    spec: { restartPolicy: "Always" },
    status: { phase: "Running", podIP: "10.0.0.1" },
  },
  {
    metadata: { uid: "2", name: "db", namespace: "shop", labels: { app: "db" } },
    spec: { hostNetwork: true },
    status: { phase: "Pending" },
  },
  { metadata: { uid: "3", name: "job", namespace: "batch" }, status: { phase: "Succeeded" } },
];

function names(spec: Parameters<typeof compilePodFilter>[0]): string[] {
  return pods.filter(compilePodFilter(spec)).map((p) => p.metadata.name);
}

Deno.test("compilePodFilter() takes the API server's label and field selector syntax", async (t) => {
  const cases: Array<[Parameters<typeof compilePodFilter>[0], string[]]> = [
    [{}, ["web", "db", "job"]],
    [{ namespace: "shop" }, ["web", "db"]],
    [{ labelSelector: "app=web" }, ["web"]],
    [{ labelSelector: "app==db" }, ["db"]],
    [{ labelSelector: "app!=web" }, ["db", "job"]],
    [{ labelSelector: "app in (web, db),tier" }, ["web"]],
    [{ labelSelector: "app notin (web)" }, ["db", "job"]],
    [{ labelSelector: "!app" }, ["job"]],
    [{ fieldSelector: "status.phase=Running" }, ["web"]],
    [{ fieldSelector: "status.phase!=Running,metadata.namespace==shop" }, ["db"]],
    [{ fieldSelector: "spec.hostNetwork=true" }, ["db"]],
    [{ fieldSelector: "status.podIP=10.0.0.1" }, ["web"]],
    [{ namespace: "batch", labelSelector: "!tier", fieldSelector: "metadata.name=job" }, ["job"]],
  ];
  for (const [spec, want] of cases) {
    await t.step(JSON.stringify(spec), () => assert.deepEqual(names(spec), want));
  }
});

Deno.test("compilePodFilter() names the term it cannot parse", async (t) => {
  const cases: Array<[Parameters<typeof compilePodFilter>[0], RegExp]> = [
    [{ labelSelector: "app in (a" }, /"app in \(a"/],
    [{ labelSelector: "a=b=c" }, /"a=b=c"/],
    [{ labelSelector: "-bad=x" }, /label key "-bad"/],
    [{ fieldSelector: "spec.containers=x" }, /field "spec.containers"/],
    [{ fieldSelector: "status.phase" }, /"status.phase"/],
  ];
  for (const [spec, message] of cases) {
    await t.step(
      JSON.stringify(spec),
      () =>
        assert.throws(
          () => compilePodFilter(spec),
          (e: Error) => e instanceof SelectorError && message.test(e.message),
        ),
    );
  }
});
