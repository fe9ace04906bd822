/**
 * What `--relist-min-interval` buys and costs under sustained churn.
 *
 * CPU: `simulate-runtime` (300 pods, 50 changes/s) in one process, the daemon
 * reading it in another; the daemon's CPU time from /proc over the window,
 * and its relists, for each spacing. The simulated runtime applies the
 * node's changes every `--sync-period` (100 ms by default, events in bursts);
 * `10ms` spreads them as a real runtime does.
 *
 * Latency: in one process, a `SimCriRuntime` on a socket churned at 50
 * changes/s and the daemon's real relist loops; probe containers exit at
 * random moments and a v1alpha1 watcher times each one's MODIFIED.
 *
 * Run: deno run --frozen -A bench/relist_spacing_run.ts [SECONDS] [cpu|latency]
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { startDaemonAlone } from "./_daemon_alone.ts";
import { cpuMs } from "./_proc_usage.ts";
import { PodsClient } from "../src/client/mod.ts";
import { systemClock } from "../src/clock.ts";
import { parseServeConfig } from "../src/config.ts";
import { startDaemon } from "../src/daemon.ts";
import { silentLogger } from "../src/log.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import { runKubeletPod, startKubeletContainer } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { startCriServer } from "../src/sim/runtime/cri_server.ts";
import { CriClient, CriPodSource } from "../src/sources/cri/mod.ts";

const SECONDS = Number(Deno.args[0] ?? 60);
/** Only this phase, when given. */
const ONLY = Deno.args[1];
const SPACINGS = ["0s", "100ms"];
const PODS = 300;
const CHURN = 50;

function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Sum of a metric's samples whose line contains `match`. */
function sample(text: string, name: string, match = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name) && line.includes(match)) sum += Number(line.split(" ").at(-1));
  }
  return sum;
}

async function cpuRun(spacing: string, syncPeriod: string, dir: string) {
  const tag = `${spacing}-${syncPeriod}`;
  const run = await startDaemonAlone({
    dir,
    tag,
    pods: PODS,
    churn: CHURN,
    flags: ["--relist-min-interval", spacing],
    runtimeFlags: ["--sync-period", syncPeriod],
  });
  try {
    await pause(10_000);
    const metrics = async () =>
      await (await fetch(`http://127.0.0.1:${run.metricsPort}/metrics`)).text();
    const before = { cpu: await cpuMs(run.daemon.pid), text: await metrics() };
    const t0 = performance.now();
    await pause(SECONDS * 1000);
    const after = { cpu: await cpuMs(run.daemon.pid), text: await metrics() };
    const wall = (performance.now() - t0) / 1000;
    const delta = (name: string, match = "") =>
      sample(after.text, name, match) - sample(before.text, name, match);
    const relists = delta("pods_api_relist_duration_seconds_count", 'source="cri"');
    const relistSeconds = delta("pods_api_relist_duration_seconds_sum", 'source="cri"');
    return {
      spacing,
      syncPeriod,
      cpuPct: (after.cpu - before.cpu) / 10 / wall,
      relistsPerS: relists / wall,
      msPerRelist: relists === 0 ? 0 : (relistSeconds * 1000) / relists,
      coalescedPerS: delta("pods_api_relist_wakeups_coalesced_total", 'source="cri"') / wall,
    };
  } finally {
    await run.stop();
  }
}

/** Latency from a container's exit to its pod's MODIFIED on a watch, ms, per probe. */
async function latencyRun(spacing: string, dir: string, probes: number): Promise<number[]> {
  const runtime = new SimCriRuntime({ clock: systemClock, runtimeName: "containerd" });
  const cri = await startCriServer(runtime, { socketPath: `${dir}/lat-${spacing}.sock` });
  const client = new CriClient(cri.endpoint);
  const source = new CriPodSource({ runtime: client, nodeName: "n", runtimeName: "containerd" });
  const socket = `${dir}/lat-${spacing}/pods-api.sock`;
  const config = parseServeConfig([
    "--socket",
    socket,
    "--kubelet-compat-socket=",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--hostname-override",
    "n",
    "--watch-queue-size",
    "100000",
    "--relist-min-interval",
    spacing,
  ]);
  const pods: { uid: string; sandbox: string; container: string; attempt: number }[] = [];
  for (let i = 0; i < PODS; i++) {
    const uid = `uid-${i}`;
    const h = await runKubeletPod(runtime, {
      name: `p-${i}`,
      uid,
      containers: [{ name: "app", image: "busybox:1" }],
    });
    pods.push({ uid, sandbox: h.sandboxId, container: h.containerIds["app"]!, attempt: 0 });
  }
  const daemon = await startDaemon(config, {
    log: silentLogger,
    clock: systemClock,
    sources: [source],
    registry: createMetricsRegistry(),
    runLoops: true,
  });
  await daemon.gate.waitOpen(AbortSignal.timeout(30_000));
  const stop = new AbortController();
  /** Uid of the probe waiting for its MODIFIED, and when it changed. */
  let probe: { uid: string; at: number; seen: PromiseWithResolvers<number> } | undefined;
  const watcher = new PodsClient({ socket });
  const watching = (async () => {
    for await (const event of watcher.watchPods({ signal: stop.signal })) {
      const uid = event.pod?.metadata?.uid;
      if (probe !== undefined && uid === probe.uid && event.type === "MODIFIED") {
        probe.seen.resolve(performance.now() - probe.at);
      }
    }
  })().catch((e) => {
    if (!stop.signal.aborted) console.error("watch ended", e);
  });
  // Churn: a container exits, the next change restarts it (a new attempt).
  const churning = (async () => {
    let n = 0;
    while (!stop.signal.aborted) {
      const p = pods[100 + (n++ % (PODS - 100))]!;
      try {
        runtime.exitContainer(p.container, { exitCode: 1 });
        p.attempt++;
        p.container = await startKubeletContainer(runtime, p.sandbox, {
          pod: { name: `p-${pods.indexOf(p)}`, uid: p.uid },
          container: { name: "app", image: "busybox:1" },
          attempt: p.attempt,
        });
      } catch { /* shutting down */ }
      await pause(2000 / CHURN);
    }
  })();
  await pause(3000);
  const latencies: number[] = [];
  for (let i = 0; i < probes; i++) {
    await pause(150 + Math.random() * 200);
    const p = pods[i % 100]!;
    const seen = Promise.withResolvers<number>();
    probe = { uid: p.uid, at: performance.now(), seen };
    runtime.exitContainer(p.container, { exitCode: 0 });
    latencies.push(await seen.promise);
    p.attempt++;
    p.container = await startKubeletContainer(runtime, p.sandbox, {
      pod: { name: `p-${i % 100}`, uid: p.uid },
      container: { name: "app", image: "busybox:1" },
      attempt: p.attempt,
    });
  }
  stop.abort();
  await churning;
  watcher.close();
  await daemon.close();
  await watching;
  client.close();
  await cri.close();
  return latencies;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

const dir = await Deno.makeTempDir({ prefix: "relist-spacing-" });
try {
  for (const syncPeriod of ONLY === "latency" ? [] : ["100ms", "10ms"]) {
    for (const spacing of SPACINGS) {
      const r = await cpuRun(spacing, syncPeriod, dir);
      console.log(
        `cpu  spacing=${r.spacing.padEnd(5)} sim-sync=${r.syncPeriod.padEnd(5)} daemon CPU ${
          r.cpuPct.toFixed(1)
        }%  relists ${r.relistsPerS.toFixed(1)}/s (${
          r.msPerRelist.toFixed(1)
        } ms each)  coalesced ${r.coalescedPerS.toFixed(1)}/s`,
      );
    }
  }
  for (const spacing of ONLY === "cpu" ? [] : SPACINGS) {
    const l = (await latencyRun(spacing, dir, 100)).sort((a, b) => a - b);
    console.log(
      `watch spacing=${spacing.padEnd(5)} change->event ms: p50 ${pct(l, 0.5).toFixed(1)} p90 ${
        pct(l, 0.9).toFixed(1)
      } max ${l.at(-1)!.toFixed(1)}`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
