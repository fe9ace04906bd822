// Memory under sustained churn (issue 19 item 3). In CI: the pipeline over a
// simulated node of 300 pods changing 50 times a second for two simulated
// minutes, 50 watchers draining, on a fake clock: the history and the
// tombstones stay within their byte bounds, and every watcher keeps up. With
// PODS_API_LONG=1 (`deno task test:long`): the daemon in its own process with
// its V8 flags, reading `pods-api simulate-runtime` (300 pods, 50 changes/s),
// 50 watchers, 10 minutes (PODS_API_SOAK_MINUTES): RSS within 160 MB and
// flat after the warm-up, and changes reached every watcher in both halves.
// The warm-up is two minutes, or a quarter of a shorter run, and 24 samples
// are taken whatever the length, so no run judges an empty window.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { silentLogger } from "../../src/log.ts";
import { PodsClient } from "../../src/client/mod.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { PodPipeline } from "../../src/pipeline/mod.ts";
import { encodePod } from "../../src/proto/mod.ts";
import { SimulatedNode, SimulatedPodSource } from "../../src/sim/mod.ts";
import { startDaemonAlone } from "../../bench/_daemon_alone.ts";
import { rssMb } from "../../bench/_proc_usage.ts";
import { LONG } from "./_support.ts";

/** The sum of a metric's samples in an exposition. */
function sampleSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return sum;
}

const PODS = 300;
const CHURN = 50;
const WATCHERS = 50;

Deno.test("under 50 changes/s on 300 pods the history and tombstones stay within their byte bounds", async () => {
  const clock = new FakeClock(Date.parse("2026-12-01T00:00:00Z"));
  const historyBytes = 2 * 1024 * 1024;
  const tombstoneBytes = 512 * 1024;
  const node = new SimulatedNode({ clock, pods: PODS, churnPerSecond: CHURN, seed: 19 });
  const source = new SimulatedPodSource({ node, clock });
  const pipeline = new PodPipeline({
    sources: ["fake"],
    encode: encodePod,
    clock,
    metrics: createMetricsRegistry().metrics,
    log: silentLogger,
    // Time and count bounds far away: only the byte bounds can hold.
    history: { maxAgeMs: 3_600_000, maxEvents: 1_000_000, maxBytes: historyBytes },
    tombstoneTtlMs: 3_600_000,
    tombstoneMaxBytes: tombstoneBytes,
  });
  const stop = new AbortController();
  const watchers = Array.from(
    { length: WATCHERS },
    () => pipeline.hub.subscribe({ signal: stop.signal, queueLimit: 1000 }),
  );
  const received = new Array<number>(WATCHERS).fill(0);
  const signal = new AbortController().signal;
  let peakHistory = 0;
  let peakTombstones = 0;
  let events = 0;
  for (let step = 0; step < 1200; step++) {
    clock.advance(100);
    const before = pipeline.cache.resourceVersion;
    pipeline.apply("fake", await source.list(signal));
    events += pipeline.cache.resourceVersion - before;
    for (let w = 0; w < WATCHERS; w++) {
      const sub = watchers[w]!;
      while (sub.pending > 0) {
        const item = await sub.next();
        assert.equal(item.state, "event");
        received[w]!++;
      }
    }
    peakHistory = Math.max(peakHistory, pipeline.query.historyBytes);
    peakTombstones = Math.max(peakTombstones, pipeline.query.tombstoneBytes);
  }
  stop.abort();
  pipeline.close();
  assert.ok(events >= 4000, `${events} changes in two simulated minutes`);
  assert.ok(peakHistory <= historyBytes, `history held ${peakHistory} > ${historyBytes}`);
  assert.ok(peakHistory > historyBytes * 0.9, `the history bound was reached: ${peakHistory}`);
  assert.ok(peakTombstones <= tombstoneBytes, `tombstones ${peakTombstones} > ${tombstoneBytes}`);
  assert.ok(peakTombstones > tombstoneBytes * 0.5, `tombstones reached ${peakTombstones}`);
  assert.ok(pipeline.query.historySize < events, "old changes were let go");
  // Coalescing may merge changes of one pod; no watcher fell behind or was dropped.
  for (const n of received) assert.ok(n > 0 && n <= events, `${n} of ${events}`);
  assert.ok(watchers.every((w) => w.open === false || w.pending === 0));
});

Deno.test({
  name:
    "soak: 300 pods, 50 changes/s, 50 watchers for 10 minutes keep the daemon within 160 MB, flat",
  ignore: !LONG,
  async fn() {
    const minutes = Number(Deno.env.get("PODS_API_SOAK_MINUTES") ?? "10");
    const dir = await Deno.makeTempDir({ prefix: "pods-api-soak-" });
    const alone = await startDaemonAlone({ dir, tag: "soak", pods: PODS, churn: CHURN });
    const stop = new AbortController();
    const counts = new Array<number>(WATCHERS).fill(0);
    const ended: string[] = [];
    const clients = Array.from(
      { length: WATCHERS },
      () => new PodsClient({ socket: alone.socket }),
    );
    const watches = clients.map(async (client, i) => {
      try {
        for await (const _ of client.watchPods({ signal: stop.signal })) counts[i]!++;
      } catch (err) {
        if (!stop.signal.aborted) ended.push(String(err));
      }
    });
    assert.ok(minutes > 0, `PODS_API_SOAK_MINUTES=${minutes}`);
    const warmUpS = Math.min(120, minutes * 15);
    const intervalMs = Math.min(5000, minutes * 60_000 / 24);
    const samples: { s: number; rss: number; events: number }[] = [];
    const started = performance.now();
    const delivered = () => counts.reduce((a, b) => a + b, 0);
    try {
      let eventsAtWarmUp = -1;
      while (performance.now() - started < minutes * 60_000) {
        await new Promise((r) => setTimeout(r, intervalMs));
        const s = (performance.now() - started) / 1000;
        if (eventsAtWarmUp < 0 && s >= warmUpS) eventsAtWarmUp = delivered();
        samples.push({ s, rss: await rssMb(alone.daemon.pid), events: delivered() });
      }
      const metrics = await (await fetch(`http://127.0.0.1:${alone.metricsPort}/metrics`)).text();
      const dropped = sampleSum(metrics, "kubelet_pod_watch_events_dropped_total");
      const events = delivered();
      const warm = samples.filter((x) => x.s >= warmUpS);
      const halfS = warmUpS + (minutes * 60 - warmUpS) / 2;
      const first = warm.filter((x) => x.s < halfS);
      const second = warm.filter((x) => x.s >= halfS);
      assert.ok(
        first.length >= 2 && second.length >= 2,
        `samples after the warm-up: ${first.length} + ${second.length}`,
      );
      const peak = Math.max(...warm.map((x) => x.rss));
      const firstHalf = Math.max(...first.map((x) => x.rss));
      const secondHalf = Math.max(...second.map((x) => x.rss));
      const summary = {
        minutes,
        events,
        dropped,
        ended: ended.length,
        rssStart: samples[0]?.rss,
        rssPeakAfterWarmUp: peak,
        rssMaxFirstHalf: firstHalf,
        rssMaxSecondHalf: secondHalf,
        rssEnd: samples.at(-1)?.rss,
      };
      // deno-lint-ignore no-console
      console.log(`soak: ${JSON.stringify(summary)}`);
      await Deno.writeTextFile(
        `${dir}/../pods-api-soak.json`,
        JSON.stringify({ summary, samples }),
      );
      assert.equal(ended.length, 0, ended.join("\n"));
      assert.equal(dropped, 0);
      // Changes flowed to every watcher, and on through both halves of the window.
      assert.ok(counts.every((n) => n > 0), `events per watcher: ${counts.join(", ")}`);
      assert.ok(eventsAtWarmUp > 0, "changes arrived during the warm-up");
      assert.ok(first.at(-1)!.events > first[0]!.events, "changes arrived in the first half");
      assert.ok(second.at(-1)!.events > first.at(-1)!.events, "and in the second half");
      assert.ok(peak <= 160, `RSS peaked at ${peak.toFixed(0)} MB after the warm-up`);
      assert.ok(
        secondHalf <= firstHalf + 16,
        `RSS grew: ${firstHalf.toFixed(0)} MB -> ${secondHalf.toFixed(0)} MB`,
      );
    } finally {
      stop.abort();
      await Promise.allSettled(watches);
      for (const c of clients) c.close();
      await alone.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
