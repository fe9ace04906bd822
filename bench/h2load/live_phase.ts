/**
 * The live phase of `bench:h2load`, daemon alone: `changes` mutations a
 * second on the simulated node (bench/h2load/sim_runtime.ts, in its own
 * process, writing its change timeline), the daemon relisting it every 10
 * ms, against bench/go/refserver broadcasting `MODIFIED` events; 100 Go
 * watchers (bench/go/loadclient) on each, after their initial list.
 *
 * Both servers deliver the same number of changes a second. A mutation of
 * the simulated node is not always a pod event (a container that starts
 * with its pod is one ADDED; a pod created and started between two relists
 * is one event), so the daemon first runs with no watcher: what its relists
 * publish a second (`pods_api_pod_events_total`) is the rate Go's server
 * then broadcasts, and what they cost (CPU with no watcher) is given apart.
 *
 * Per server: events delivered a second to all watchers and the share of
 * the changes each watcher got, server CPU per delivered event (the
 * daemon's also net of its relists), latency from each change to its
 * arrival (the daemon's includes up to a 10 ms runtime sync and a 10 ms
 * relist period), and drops (events dropped, watchers ended
 * RESOURCE_EXHAUSTED).
 *
 * @module
 */

import { type Latencies, latencies, readTimeline } from "../_live_latency.ts";
import { cpuMs } from "../_proc_usage.ts";
import { spawnProc, stopProc } from "../_child_process.ts";
import { startDaemonAlone } from "../_daemon_alone.ts";
import { metricValue } from "../_sim_daemon.ts";

const SIM_RUNTIME = new URL("./sim_runtime.ts", import.meta.url).pathname;
/** A watcher's queue in both servers: a burst of one relist never ends a watcher here. */
const QUEUE = 1000;

/** What the phase needs. */
export interface LivePhaseOptions {
  readonly dir: string;
  readonly loadclient: string;
  readonly refserver: string;
  /** `loadclient dump` of a daemon with `pods` pods: the Go server's bytes. */
  readonly dump: string;
  readonly pods: number;
  /** Mutations a second on the simulated node. */
  readonly changes: number;
  readonly watchers: number;
  /** Seconds of live events after every watcher has synced. */
  readonly seconds: number;
  readonly serverCpu: number;
  readonly clientCpu: number;
}

/** One server's figures. */
export interface LiveFigures {
  /** Changes a second the server made: what the daemon's relists published, Go's broadcast rate. */
  readonly changes: number;
  /** Events a second, all watchers together. */
  readonly delivered: number;
  /** Delivered events over changes made, per watcher (1: every watcher got every change). */
  readonly completeness: number;
  readonly cpuPerEventUs: number;
  /** The same, without the daemon's relists (its CPU with no watcher); Go's does not relist. */
  readonly netCpuPerEventUs: number;
  readonly latency: Latencies;
  readonly drops: number;
}

interface WatchOut {
  readonly "live_events": number;
  readonly "live_seconds": number;
  readonly "synced_at_ns": number;
  readonly synced: number;
  readonly ended: Record<string, number>;
}

async function watch(
  o: LivePhaseOptions,
  socket: string,
  pid: number,
  arrivals: string,
): Promise<WatchRun> {
  const cpu0 = await cpuMs(pid);
  const t0 = performance.now();
  const run = await new Deno.Command("taskset", {
    args: [
      "-c",
      String(o.clientCpu),
      o.loadclient,
      "watch",
      "-socket",
      socket,
      "-watchers",
      String(o.watchers),
      "-duration",
      String(o.seconds),
      "-out",
      arrivals,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const used = await cpuMs(pid) - cpu0;
  const seconds = (performance.now() - t0) / 1000;
  if (!run.success) {
    throw new Error(`loadclient watch on ${socket}: ${new TextDecoder().decode(run.stderr)}`);
  }
  return {
    out: JSON.parse(new TextDecoder().decode(run.stdout)) as WatchOut,
    cpuMs: used,
    seconds,
  };
}

/** A run of the Go client against one server. */
interface WatchRun {
  readonly out: WatchOut;
  /** The server's CPU over the whole run (connections and initial lists included). */
  readonly cpuMs: number;
  /** The run's wall time. */
  readonly seconds: number;
}

/** What the daemon does with no watcher connected. */
interface Quiet {
  /** Pod events its relists publish a second. */
  readonly eventsPerSecond: number;
  /** CPU ms a second its relists take. */
  readonly cpuMsPerSecond: number;
}

/** Events published and CPU used over `seconds`, after 2 s to settle. */
async function quietWindow(pid: number, metricsPort: number, seconds: number): Promise<Quiet> {
  await new Promise((r) => setTimeout(r, 2000));
  const events0 = await metricValue(metricsPort, EVENTS_METRIC);
  const cpu0 = await cpuMs(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 1000 * seconds));
  const elapsed = (performance.now() - t0) / 1000;
  return {
    eventsPerSecond: (await metricValue(metricsPort, EVENTS_METRIC) - events0) / elapsed,
    cpuMsPerSecond: (await cpuMs(pid) - cpu0) / elapsed,
  };
}

const EVENTS_METRIC = "pods_api_pod_events_total";

/** Where the Go client writes a server's arrivals. */
function arrivalsOf(o: LivePhaseOptions, server: "daemon" | "go"): string {
  return `${o.dir}/live-arrivals-${server}.txt`;
}

/** A server's figures from its run, its change timeline and what it dropped. */
async function figures(
  o: LivePhaseOptions,
  server: "daemon" | "go",
  w: WatchRun,
  made: { changes: number; relistCpuMsPerSecond: number },
  timeline: string,
  dropped: number,
): Promise<LiveFigures> {
  const latency = await latencies(
    arrivalsOf(o, server),
    await readTimeline(timeline, server === "daemon" ? "node" : "go"),
    w.out.synced_at_ns / 1e6,
  );
  const delivered = w.out.live_events / Math.max(0.001, w.out.live_seconds);
  const events = Math.max(1, w.out.live_events);
  return {
    changes: made.changes,
    delivered,
    completeness: delivered / Math.max(1e-9, made.changes * o.watchers),
    cpuPerEventUs: (1000 * w.cpuMs) / events,
    netCpuPerEventUs: (1000 * (w.cpuMs - made.relistCpuMsPerSecond * w.seconds)) / events,
    latency,
    drops: dropped + (w.out.ended.RESOURCE_EXHAUSTED ?? 0),
  };
}

/**
 * Runs the phase on the daemon, then on Go.
 *
 * @param o Sizes, rate, tools and CPUs.
 * @returns Each server's figures.
 * @throws {Error} When a server or the client does not run.
 */
export async function livePhase(
  o: LivePhaseOptions,
): Promise<Record<"daemon" | "go", LiveFigures>> {
  const daemonTimeline = `${o.dir}/live-timeline-daemon.txt`;
  const alone = await startDaemonAlone({
    dir: o.dir,
    tag: `live-${o.pods}`,
    pods: o.pods,
    churn: o.changes,
    relistPeriod: "10ms",
    daemonCpu: o.serverCpu,
    runtimeCpu: o.clientCpu,
    runtimeScript: SIM_RUNTIME,
    runtimeFlags: ["--timeline", daemonTimeline, "--sync-period", "10ms"],
    flags: ["--watch-queue-size", String(QUEUE)],
  });
  let quiet;
  let daemonRun;
  let daemonDropped;
  try {
    quiet = await quietWindow(alone.daemon.pid, alone.metricsPort, o.seconds);
    daemonRun = await watch(o, alone.socket, alone.daemon.pid, arrivalsOf(o, "daemon"));
    daemonDropped = await metricValue(alone.metricsPort, "kubelet_pod_watch_events_dropped_total");
  } finally {
    // The simulated runtime writes its timeline as it stops.
    await alone.stop();
  }
  const daemon = await figures(
    o,
    "daemon",
    daemonRun,
    {
      changes: quiet.eventsPerSecond,
      relistCpuMsPerSecond: quiet.cpuMsPerSecond,
    },
    daemonTimeline,
    daemonDropped,
  );
  // Go broadcasts what the daemon's node made.
  const goRate = Math.max(1, Math.round(quiet.eventsPerSecond));

  const goTimeline = `${o.dir}/live-timeline-go.txt`;
  const goSocket = `${o.dir}/go-live.sock`;
  const go = spawnProc(
    o.refserver,
    [
      "-socket",
      goSocket,
      "-list",
      `${o.dump}/list.bin`,
      "-get",
      `${o.dump}/get.bin`,
      "-watch",
      `${o.dump}/watch.bin`,
      "-live-rate",
      String(goRate),
      "-timeline",
      goTimeline,
      "-queue",
      String(QUEUE),
    ],
    `${o.dir}/go-live.log`,
    o.serverCpu,
  );
  let goRun;
  try {
    await go.firstLine;
    goRun = await watch(o, goSocket, go.pid, arrivalsOf(o, "go"));
  } finally {
    await stopProc(go);
  }
  return {
    daemon,
    go: await figures(o, "go", goRun, { changes: goRate, relistCpuMsPerSecond: 0 }, goTimeline, 0),
  };
}
