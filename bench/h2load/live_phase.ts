/**
 * The live phase of `bench:h2load`, daemon alone: `changes` pod changes a
 * second on the simulated node (bench/h2load/sim_runtime.ts, in its own
 * process, writing its change timeline), the daemon relisting it every 10
 * ms, against bench/go/refserver broadcasting the same number of `MODIFIED`
 * events a second; 100 Go watchers (bench/go/loadclient) on each, after
 * their initial list. Per server: events delivered a second to all watchers,
 * server CPU per delivered event, latency from each change to its arrival,
 * and drops (events the daemon dropped, watchers ended RESOURCE_EXHAUSTED).
 *
 * The two do not make the same changes: Go's server broadcasts exactly
 * `changes` a second; the simulated node makes that many mutations, which
 * the daemon's relists turn into pod events.
 *
 * @module
 */

import { type Latencies, latencies, readTimeline } from "../_live_latency.ts";
import { cpuMs } from "../_proc_usage.ts";
import { spawnProc, startDaemonAlone, stopProc } from "../_daemon_alone.ts";

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
  /** Changes a second. */
  readonly changes: number;
  readonly watchers: number;
  /** Seconds of live events after every watcher has synced. */
  readonly seconds: number;
  readonly serverCpu: number;
  readonly clientCpu: number;
}

/** One server's figures. */
export interface LiveFigures {
  /** Events a second, all watchers together. */
  readonly delivered: number;
  readonly cpuPerEventUs: number;
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
): Promise<{ out: WatchOut; cpuMs: number }> {
  const cpu0 = await cpuMs(pid);
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
  if (!run.success) {
    throw new Error(`loadclient watch on ${socket}: ${new TextDecoder().decode(run.stderr)}`);
  }
  return { out: JSON.parse(new TextDecoder().decode(run.stdout)) as WatchOut, cpuMs: used };
}

/** Where the Go client writes a server's arrivals. */
function arrivalsOf(o: LivePhaseOptions, server: "daemon" | "go"): string {
  return `${o.dir}/live-arrivals-${server}.txt`;
}

/** A server's figures from its run, its change timeline and what it dropped. */
async function figures(
  o: LivePhaseOptions,
  server: "daemon" | "go",
  w: { out: WatchOut; cpuMs: number },
  timeline: string,
  dropped: number,
): Promise<LiveFigures> {
  const latency = await latencies(
    arrivalsOf(o, server),
    await readTimeline(timeline, server === "daemon" ? "node" : "go"),
    w.out.synced_at_ns / 1e6,
  );
  return {
    delivered: w.out.live_events / Math.max(0.001, w.out.live_seconds),
    cpuPerEventUs: (1000 * w.cpuMs) / Math.max(1, w.out.live_events),
    latency,
    drops: dropped + (w.out.ended.RESOURCE_EXHAUSTED ?? 0),
  };
}

async function droppedEvents(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("kubelet_pod_watch_events_dropped_total")) {
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return total;
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
  let daemonRun;
  let daemonDropped;
  try {
    daemonRun = await watch(o, alone.socket, alone.daemon.pid, arrivalsOf(o, "daemon"));
    daemonDropped = await droppedEvents(alone.metricsPort);
  } finally {
    // The simulated runtime writes its timeline as it stops.
    await alone.stop();
  }
  const daemon = await figures(o, "daemon", daemonRun, daemonTimeline, daemonDropped);

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
      String(o.changes),
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
  return { daemon, go: await figures(o, "go", goRun, goTimeline, 0) };
}
