// createMetrics(): every labelled counter whose label values are a closed set
// is exported at 0 for each of them before its first event (as the kubelet's
// and go-grpc-prometheus' are), so increase() and rate() see that first
// event; the seeded values are the ones the code emits.

import assert from "node:assert/strict";
import { Registry } from "../../src/metrics/exposition.ts";
import { Counter } from "../../src/metrics/instruments.ts";
import { createMetrics, type Metrics } from "../../src/metrics/metrics.ts";
import {
  GRPC_CODE_NAMES,
  H2_ERROR_NAMES,
  REFUSAL_REASONS,
  SURFACES,
} from "../../src/metrics/label_values.ts";
import { goCodeName, STATUS } from "../../src/grpc/status.ts";
import { H2_ERROR, h2ErrorName } from "../../src/h2/errors.ts";
import { REFUSAL_MESSAGES } from "../../src/serving/refusal.ts";

/**
 * Labelled counters whose values are only known at run time: the configured
 * sources' names, errnos, HTTP statuses, reasons derived from the error met.
 */
const OPEN_LABELS: readonly (keyof Metrics)[] = [
  "httpRequests",
  "relistErrors",
  "relistWakeupsCoalesced",
  "sourceItemsRejected",
  "sourceFieldsUnrepresentable",
  "acceptErrors",
  "podResourcesErrors",
];

function fresh(): { metrics: Metrics; text: string } {
  const registry = new Registry();
  const metrics = createMetrics(registry);
  return { metrics, text: registry.expose() };
}

Deno.test("createMetrics() exports every labelled counter with known label values at 0 from the start", async (t) => {
  const { metrics, text } = fresh();
  const counters = Object.entries(metrics).filter(([, m]) =>
    m instanceof Counter && m.labelNames.length > 0
  ) as [keyof Metrics, Counter<string>][];
  assert.ok(counters.length >= 25, `${counters.length} labelled counters`);
  for (const [key, counter] of counters) {
    await t.step(counter.name, () => {
      const samples = text.split("\n").filter((l) => l.startsWith(`${counter.name}{`));
      if (OPEN_LABELS.includes(key)) {
        assert.deepEqual(samples, [], `${key} has values known only at run time`);
        return;
      }
      assert.ok(samples.length > 0, `${key} is seeded (or listed in OPEN_LABELS with its reason)`);
      for (const line of samples) assert.match(line, / 0$/);
    });
  }
});

Deno.test("createMetrics() seeds one dropped watcher's series, so increase() sees the first drop", () => {
  const { text } = fresh();
  for (const surface of SURFACES) {
    assert.ok(
      text.includes(`\npods_api_watchers_dropped_total{server_api_version="${surface}"} 0\n`),
      surface,
    );
  }
  assert.match(
    text,
    /^kubelet_pod_requests_watch_total\{server_api_version="v1alpha1",status_code="Canceled"\} 0$/m,
  );
});

Deno.test("the seeded label values are the names the code emits", async (t) => {
  await t.step("gRPC status codes, as Go names them", () => {
    const codes = Object.values(STATUS).sort((a, b) => a - b);
    assert.deepEqual([...GRPC_CODE_NAMES], codes.map((c) => goCodeName(c)));
  });
  await t.step("HTTP/2 error codes", () => {
    const codes = Object.values(H2_ERROR).sort((a, b) => a - b);
    assert.deepEqual([...H2_ERROR_NAMES], codes.map((c) => h2ErrorName(c)));
  });
  await t.step("refusal reasons", () => {
    assert.deepEqual(
      [...REFUSAL_REASONS].sort(),
      Object.keys(REFUSAL_MESSAGES).sort(),
    );
  });
});
