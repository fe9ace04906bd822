import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import { serveMetrics } from "../../src/metrics/http.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";

Deno.test("serveMetrics() /readyz answers ok, lists degraded sources after it, 503 with reasons", async (t) => {
  let notReady: string[] = [];
  let degraded: string[] = [];
  await using server = await serveMetrics({ hostname: "127.0.0.1", port: 0 }, {
    registry: createMetricsRegistry(),
    readiness: { notReadyReasons: () => notReady, degradedReasons: () => degraded },
    log: silentLogger,
  });
  const readyz = async () => {
    const response = await fetch(`http://127.0.0.1:${server.port}/readyz`);
    return { status: response.status, body: await response.text() };
  };
  await t.step("ready", async () => {
    assert.deepEqual(await readyz(), { status: 200, body: "ok\n" });
  });
  await t.step("ready, with a released source failing", async () => {
    degraded = ['source "kubelet" has not completed its first read'];
    assert.deepEqual(await readyz(), {
      status: 200,
      body: 'ok\ndegraded: source "kubelet" has not completed its first read\n',
    });
  });
  await t.step("not ready", async () => {
    notReady = ['source "cri" last read 200 s ago (threshold 180 s)'];
    assert.deepEqual(await readyz(), {
      status: 503,
      body: 'not ready: source "cri" last read 200 s ago (threshold 180 s)\n',
    });
  });
});
