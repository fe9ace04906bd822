// The daemon hands a runtime event the CRI source took into its view on to
// the cache without a relist: with the periodic relist an hour away, a
// container's exit still reaches clients.
import assert from "node:assert/strict";
import { systemClock } from "../src/clock.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import { runKubeletPod } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { startCriServer } from "../src/sim/runtime/cri_server.ts";
import { CriClient, CriPodSource } from "../src/sources/cri/mod.ts";
import { startHarness } from "./_support/daemon_harness.ts";
import { scrapedMetricValue } from "./_support/metric_value.ts";
import { poll } from "./_support/poll.ts";
import { removeTree } from "./_support/remove_tree.ts";

Deno.test("the daemon serves a change a runtime event carried, without a relist", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-events-" });
  const runtime = new SimCriRuntime({ runtimeName: "containerd" });
  const cri = await startCriServer(runtime, { socketPath: `${dir}/cri.sock` });
  const client = new CriClient(cri.endpoint);
  try {
    const { containerIds } = await runKubeletPod(runtime, {
      name: "web",
      uid: "uid-web",
      containers: [{ name: "app", image: "busybox:1" }],
    });
    const registry = createMetricsRegistry();
    const source = new CriPodSource({
      runtime: client,
      nodeName: "test-node",
      clock: systemClock,
      metrics: registry.metrics,
    });
    await using h = await startHarness({
      sources: [source],
      registry,
      clock: systemClock,
      runLoops: true,
      flags: ["--relist-period", "1h"],
    });
    await poll(() => h.daemon.cache.get("uid-web") !== undefined ? true : undefined);
    await poll(() => runtime.eventSubscribers > 0 ? true : undefined);
    const relists = await scrapedMetricValue(
      h.daemon.registry,
      "pods_api_relist_duration_seconds_count",
    );
    // A list's start is known to a millisecond: the exit comes after it.
    await new Promise((resolve) => setTimeout(resolve, 5));
    runtime.exitContainer(containerIds["app"]!, { exitCode: 3, reason: "Error" });
    await poll(() =>
      /"exitCode":3\b/.test(JSON.stringify(h.daemon.cache.get("uid-web")?.pod.status))
        ? true
        : undefined
    );
    assert.equal(
      await scrapedMetricValue(h.daemon.registry, "pods_api_relist_duration_seconds_count"),
      relists,
      "no relist ran",
    );
    assert.ok(
      await scrapedMetricValue(h.daemon.registry, "pods_api_runtime_events_total", {
        outcome: "applied",
      }) > 0,
    );
  } finally {
    client.close();
    await cri.close();
    removeTree(dir);
  }
});
