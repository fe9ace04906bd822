/**
 * The load benchmark: the daemon on a simulated node (child process), driven
 * by Python grpcio clients (C-core, separate processes), against a bare
 * grpc-js server returning the daemon's own response bytes (the transport
 * ceiling), in the same run. See BENCHMARKS.md for what each figure means.
 *
 * Usage: `deno run <perms> bench/load/run.ts [--quick] [--pods 110,1000,5000]
 *   [--watch-pods 110,1000] [--duration 2] [--watch-duration 5]
 *   [--concurrency 4] [--watchers 100] [--json FILE] [--direct] [--keep]`
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { cpuMs, readProc, rssMb, rssSampler } from "../_proc_usage.ts";
import { PERMS, type Proc, runCommand, spawnProc, stopProc } from "../_child_process.ts";
import { metricValue, type SimDaemon, startSimDaemon } from "../_sim_daemon.ts";

const HERE = new URL(".", import.meta.url).pathname;
const PYTHON = "/usr/bin/python3";
const CLIENT = `${HERE}client.py`;
const MASK = "metadata.name,status.phase,status.podIPs";

interface UnaryResult {
  ok: number;
  errors: Record<string, number>;
  seconds: number;
  rps: number;
  "p50_ms": number | null;
  "p99_ms": number | null;
  "mean_bytes": number;
}

interface WatchClientResult {
  "initial_events": number;
  "live_events": number;
  ended: Record<string, number>;
  synced: number;
  "sync_last_ms": number | null;
  "start_ns": number;
  "synced_at_ns": number;
  "initial_last_ns": number;
  "end_ns": number;
}

function spawnDeno(script: string, args: string[], logPath: string): Proc {
  return spawnProc(Deno.execPath(), [
    "run",
    "--frozen",
    ...PERMS,
    `${HERE}${script}`,
    ...args,
  ], logPath);
}

function python(args: string[], timeoutMs = 120_000): Promise<string> {
  return runCommand(PYTHON, [CLIENT, ...args], timeoutMs);
}

/** `--direct` for the daemon over the simulated node's pod source alone. */
let direct = false;

function startDaemon(
  dir: string,
  options: { pods: number; churn: number; relistPeriod: string; queue?: number },
): Promise<SimDaemon> {
  const tag = `${options.pods}-${options.churn}`;
  return startSimDaemon({
    ...options,
    direct,
    socket: `${dir}/pods-${tag}.sock`,
    timeline: `${dir}/timeline-${tag}.txt`,
    logPath: `${dir}/daemon-${tag}.log`,
  });
}

interface UnaryFigures {
  rps: number;
  p50: number;
  p99: number;
  /** Daemon CPU per request, ms (process CPU over the phase / requests). */
  cpuPerReq?: number;
  errors: number;
  bytes: number;
}

async function unaryPhase(
  socket: string,
  options: {
    method: string;
    mask?: string;
    uids?: string;
    duration: number;
    concurrency: number;
    pid?: number;
  },
): Promise<UnaryFigures> {
  const args = [
    "unary",
    "--socket",
    socket,
    "--method",
    options.method,
    "--duration",
    String(options.duration),
    "--concurrency",
    String(options.concurrency),
  ];
  if (options.mask) args.push("--mask", options.mask);
  if (options.uids) args.push("--uids", options.uids);
  const cpu0 = options.pid === undefined ? 0 : await cpuMs(options.pid);
  const r = JSON.parse(await python(args)) as UnaryResult;
  const cpu1 = options.pid === undefined ? 0 : await cpuMs(options.pid);
  const errors = Object.values(r.errors).reduce((a, b) => a + b, 0);
  return {
    rps: r.rps,
    p50: r.p50_ms ?? NaN,
    p99: r.p99_ms ?? NaN,
    ...(options.pid === undefined ? {} : { cpuPerReq: (cpu1 - cpu0) / Math.max(1, r.ok) }),
    errors,
    bytes: r.mean_bytes,
  };
}

interface WatchFigures {
  pods: number;
  churn: number;
  queue: number;
  watchers: number;
  synced: number;
  initialEvents: number;
  initialSeconds: number;
  initialEventsPerSec: number;
  liveEvents: number;
  liveEventsPerSec: number;
  expectedLivePerSec: number;
  pipelineP50: number;
  pipelineP99: number;
  e2eP50: number;
  e2eP99: number;
  matched: number;
  dropsMetric: number;
  endedWithError: Record<string, number>;
  rssPeak: number;
  cpuPerLiveEvent: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))]!;
}

async function watchClients(
  dir: string,
  socket: string,
  options: { tag: string; watchers: number; processes: number; duration: number },
): Promise<{ results: WatchClientResult[]; outs: string[] }> {
  const per = Math.ceil(options.watchers / options.processes);
  const outs: string[] = [];
  const runs: Promise<string>[] = [];
  for (let i = 0, left = options.watchers; left > 0; i++, left -= per) {
    const out = `${dir}/watch-${options.tag}-${i}.txt`;
    outs.push(out);
    runs.push(python([
      "watch",
      "--socket",
      socket,
      "--watchers",
      String(Math.min(per, left)),
      "--duration",
      String(options.duration),
      "--sync-timeout",
      "25",
      "--out",
      out,
    ]));
  }
  const results = (await Promise.all(runs)).map((t) => JSON.parse(t) as WatchClientResult);
  return { results, outs };
}

function initialRate(results: WatchClientResult[]): { events: number; seconds: number } {
  const events = results.reduce((a, r) => a + r.initial_events, 0);
  const start = Math.min(...results.map((r) => r.start_ns));
  const last = Math.max(...results.map((r) => Math.max(r.initial_last_ns, r.synced_at_ns)));
  return { events, seconds: (last - start) / 1e9 };
}

/** The bare server's initial-list streaming rate: the transport ceiling for watch fan-out. */
async function bareWatchPhase(
  dir: string,
  options: { pods: number; watchers: number; processes: number },
): Promise<{ eventsPerSec: number; seconds: number }> {
  const list = `${dir}/list-${options.pods}.bin`;
  const socket = `${dir}/bare-watch-${options.pods}.sock`;
  const bare = spawnDeno(
    "bare_server.ts",
    ["--socket", socket, "--list", list],
    `${dir}/bare-watch.log`,
  );
  await bare.firstLine;
  const { results } = await watchClients(dir, socket, {
    tag: `bare-${options.pods}`,
    watchers: options.watchers,
    processes: options.processes,
    duration: 0.2,
  });
  await stopProc(bare);
  const r = initialRate(results);
  return { eventsPerSec: r.events / r.seconds, seconds: r.seconds };
}

async function watchPhase(
  dir: string,
  options: {
    pods: number;
    churn: number;
    watchers: number;
    processes: number;
    duration: number;
    relistPeriod: string;
    queue: number;
  },
): Promise<WatchFigures> {
  const daemon = await startDaemon(dir, {
    pods: options.pods,
    churn: options.churn,
    relistPeriod: options.relistPeriod,
    queue: options.queue,
  });
  const pid = daemon.proc.pid;
  const sampler = rssSampler(pid);
  const cpu0 = await cpuMs(pid);
  const { results, outs } = await watchClients(dir, daemon.socket, {
    tag: `${options.pods}-${options.churn}-${options.queue}`,
    watchers: options.watchers,
    processes: options.processes,
    duration: options.duration,
  });
  const cpu1 = await cpuMs(pid);
  const rssPeak = await sampler.stop();
  const dropsMetric = await metricValue(daemon.port, "kubelet_pod_watch_events_dropped_total");
  await stopProc(daemon.proc);

  const syncedAt = Math.max(...results.map((r) => r.synced_at_ns)) / 1e6;
  const endAt = Math.max(...results.map((r) => r.end_ns)) / 1e6;
  const initial = initialRate(results);
  const initialEvents = initial.events;
  const ended: Record<string, number> = {};
  for (const r of results) {
    for (const [k, v] of Object.entries(r.ended)) ended[k] = (ended[k] ?? 0) + v;
  }

  // Timeline: per UID, changes in observation order.
  const byUid = new Map<string, Array<[due: number, observed: number]>>();
  for (const line of (await Deno.readTextFile(daemon.timeline)).split("\n")) {
    if (line === "") continue;
    const [uid, due, observed] = line.split(" ");
    let list = byUid.get(uid!);
    if (list === undefined) byUid.set(uid!, list = []);
    list.push([Number(due), Number(observed)]);
  }
  const pipeline: number[] = [];
  const e2e: number[] = [];
  let live = 0;
  let matched = 0;
  for (const out of outs) {
    for (const line of (await Deno.readTextFile(out)).split("\n")) {
      if (line === "") continue;
      const parts = line.split(" ");
      const received = Number(parts[3]) / 1e6;
      if (received < syncedAt) continue;
      live++;
      const changes = byUid.get(parts[1]!);
      if (changes === undefined) continue;
      // The latest change observed before receipt is the one this event carries.
      let hit: [number, number] | undefined;
      for (const c of changes) {
        if (c[1] <= received) hit = c;
        else break;
      }
      if (hit === undefined || hit[1] < syncedAt) continue;
      matched++;
      pipeline.push(received - hit[1]);
      e2e.push(received - hit[0]);
    }
  }
  pipeline.sort((a, b) => a - b);
  e2e.sort((a, b) => a - b);
  const liveSeconds = Math.max(0.001, (endAt - syncedAt) / 1000);
  const initialSeconds = initial.seconds;
  return {
    pods: options.pods,
    churn: options.churn,
    queue: options.queue,
    watchers: options.watchers,
    synced: results.reduce((a, r) => a + r.synced, 0),
    initialEvents,
    initialSeconds,
    initialEventsPerSec: initialEvents / initialSeconds,
    liveEvents: live,
    // Events carrying changes observed after the last watcher synced (the
    // backlog queued during the initial lists is left out).
    liveEventsPerSec: matched / liveSeconds,
    expectedLivePerSec: options.churn * options.watchers,
    pipelineP50: percentile(pipeline, 50),
    pipelineP99: percentile(pipeline, 99),
    e2eP50: percentile(e2e, 50),
    e2eP99: percentile(e2e, 99),
    matched,
    dropsMetric,
    endedWithError: Object.fromEntries(Object.entries(ended).filter(([k]) => k !== "OK")),
    rssPeak,
    cpuPerLiveEvent: live > 0 ? (cpu1 - cpu0) / live : NaN,
  };
}

interface ListFigures {
  pods: number;
  listBytes: number;
  maskedBytes: number;
  rssIdle: number;
  rssLoadPeak: number;
  idleCpuPerRelist: number;
  rows: Array<{ name: string; bare: UnaryFigures; daemon: UnaryFigures }>;
}

async function unaryPhases(
  dir: string,
  options: {
    pods: number;
    duration: number;
    concurrency: number;
    relistPeriod: string;
    idleRelistPeriod: string;
  },
): Promise<ListFigures> {
  // Idle: a daemon relisting every `idleRelistPeriod` (no churn, so every
  // relist finds nothing changed): its RSS and the CPU each relist costs.
  const idle = await startDaemon(dir, {
    pods: options.pods,
    churn: 0,
    relistPeriod: options.idleRelistPeriod,
  });
  await new Promise((r) => setTimeout(r, 1000));
  const idleCpu0 = await cpuMs(idle.proc.pid);
  const idleStart = performance.now();
  await new Promise((r) => setTimeout(r, 2000));
  const idleCpu = (await cpuMs(idle.proc.pid)) - idleCpu0;
  const relists = (performance.now() - idleStart) / Number.parseFloat(options.idleRelistPeriod);
  await stopProc(idle.proc);

  // Requests: a daemon as deployed (relist period `relistPeriod`), no churn
  // so that every request sees the same pods.
  const daemon = await startDaemon(dir, {
    pods: options.pods,
    churn: 0,
    relistPeriod: options.relistPeriod,
  });
  const pid = daemon.proc.pid;
  await new Promise((r) => setTimeout(r, 1000));
  const rssIdle = await rssMb(pid);

  const list = `${dir}/list-${options.pods}.bin`;
  const masked = `${dir}/masked-${options.pods}.bin`;
  const uids = `${dir}/uids-${options.pods}.txt`;
  const get = `${dir}/get-${options.pods}.bin`;
  const dump = JSON.parse(
    await python(["dump", "--socket", daemon.socket, "--out", list, "--uids-out", uids]),
  ) as { bytes: number };
  const dumpMasked = JSON.parse(
    await python(["dump", "--socket", daemon.socket, "--out", masked, "--mask", MASK]),
  ) as { bytes: number };
  // GetPodResponse of the first pod: field 1, the pod's bytes (same framing as a 1-pod list).
  const listBytes = await Deno.readFile(list);
  let pos = 1;
  let len = 0;
  for (let shift = 0;; shift += 7) {
    const b = listBytes[pos++]!;
    len += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
  }
  await Deno.writeFile(get, listBytes.subarray(0, pos + len));

  const bareSocket = `${dir}/bare-${options.pods}.sock`;
  const bare = spawnDeno("bare_server.ts", [
    "--socket",
    bareSocket,
    "--list",
    list,
    "--masked",
    masked,
    "--get",
    get,
  ], `${dir}/bare-${options.pods}.log`);
  await bare.firstLine;

  const sampler = rssSampler(pid);
  const rows: ListFigures["rows"] = [];
  const phases = [
    { name: "ListPods", method: "/v1alpha1.Pods/ListPods" },
    { name: "ListPods 3-path mask", method: "/v1alpha1.Pods/ListPods", mask: MASK },
    { name: "GetPod", method: "/v1alpha1.Pods/GetPod", uids },
  ];
  for (const phase of phases) {
    for (const concurrency of [options.concurrency, 1]) {
      const common = {
        method: phase.method,
        duration: options.duration,
        concurrency,
        ...(phase.mask ? { mask: phase.mask } : {}),
        ...(phase.uids ? { uids: phase.uids } : {}),
      };
      const bareFig = await unaryPhase(bareSocket, { ...common, pid: bare.pid });
      const daemonFig = await unaryPhase(daemon.socket, { ...common, pid });
      rows.push({ name: `${phase.name} c=${concurrency}`, bare: bareFig, daemon: daemonFig });
    }
  }
  const rssLoadPeak = await sampler.stop();
  await stopProc(bare);
  await stopProc(daemon.proc);
  return {
    pods: options.pods,
    listBytes: dump.bytes,
    maskedBytes: dumpMasked.bytes,
    rssIdle,
    rssLoadPeak,
    idleCpuPerRelist: idleCpu / relists,
    rows,
  };
}

function f(n: number | undefined, digits = 1): string {
  return n === undefined || Number.isNaN(n) ? "-" : n.toFixed(digits);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      pods: { type: "string" },
      "watch-pods": { type: "string" },
      duration: { type: "string" },
      "watch-duration": { type: "string" },
      concurrency: { type: "string", default: "4" },
      watchers: { type: "string", default: "100" },
      "watch-processes": { type: "string", default: "2" },
      "relist-period": { type: "string", default: "1s" },
      "watch-relist-period": { type: "string", default: "10ms" },
      "watch-queue-sizes": { type: "string", default: "100,100000" },
      json: { type: "string" },
      direct: { type: "boolean", default: false },
      keep: { type: "boolean", default: false },
    },
  });
  direct = values.direct === true;
  const quick = values.quick;
  const pods = (values.pods ?? (quick ? "1000" : "110,1000,5000")).split(",").filter(Boolean).map(
    Number,
  );
  const watchPods = (values["watch-pods"] ?? (quick ? "1000" : "110,1000")).split(",")
    .filter(Boolean).map(Number);
  const duration = Number(values.duration ?? (quick ? "1" : "2"));
  const watchDuration = Number(values["watch-duration"] ?? (quick ? "3" : "5"));
  const concurrency = Number(values.concurrency);
  const watchers = Number(values.watchers);
  const relistPeriod = values["relist-period"]!;
  const watchRelistPeriod = values["watch-relist-period"]!;
  const dir = await Deno.makeTempDir({ prefix: "pods-api-load-" });
  const started = performance.now();
  const cpuinfo = await readProc("/proc/cpuinfo");
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? "unknown";
  console.log(
    `# pods-api load benchmark (${
      quick ? "quick" : "full"
    }), ${navigator.hardwareConcurrency} CPUs, ${model}`,
  );
  console.log(
    `# Deno ${Deno.version.deno}; daemon: ${
      values.direct
        ? "simulated node's pod source only (--direct)"
        : "serve --simulate (simulated CRI runtime in-process)"
    }; clients: Python grpcio (C-core); relist period ${relistPeriod} (requests), ${watchRelistPeriod} (idle CPU, watch); mask "${MASK}"`,
  );
  const lists: ListFigures[] = [];
  for (const n of pods) {
    const r = await unaryPhases(dir, {
      pods: n,
      duration,
      concurrency,
      relistPeriod,
      idleRelistPeriod: watchRelistPeriod,
    });
    lists.push(r);
    console.log(
      `\n## ${n} pods: list ${(r.listBytes / 1e6).toFixed(2)} MB, masked ${
        (r.maskedBytes / 1e3).toFixed(1)
      } kB; RSS idle ${f(r.rssIdle)} MB, under load ${f(r.rssLoadPeak)} MB; ` +
        `idle CPU per relist (nothing changed) ${f(r.idleCpuPerRelist, 3)} ms`,
    );
    console.log(
      "| call | bare req/s | daemon req/s | ratio | bare p50/p99 ms | daemon p50/p99 ms | bare CPU ms/req | daemon CPU ms/req | CPU ratio | errors |",
    );
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const row of r.rows) {
      console.log(
        `| ${row.name} | ${f(row.bare.rps)} | ${f(row.daemon.rps)} | ${
          f(row.daemon.rps / row.bare.rps, 2)
        } | ${f(row.bare.p50, 2)} / ${f(row.bare.p99, 2)} | ${f(row.daemon.p50, 2)} / ${
          f(row.daemon.p99, 2)
        } | ${f(row.bare.cpuPerReq, 2)} | ${f(row.daemon.cpuPerReq, 2)} | ${
          f(row.bare.cpuPerReq! / row.daemon.cpuPerReq!, 2)
        } | ${row.daemon.errors} |`,
      );
    }
  }
  const watches: WatchFigures[] = [];
  const bareWatch: Array<{ pods: number; eventsPerSec: number; seconds: number }> = [];
  const processes = Number(values["watch-processes"]);
  const queues = values["watch-queue-sizes"]!.split(",").filter(Boolean).map(Number);
  console.log(
    `\n## WatchPods, ${watchers} watchers started together (${processes} client processes), ${watchDuration} s of live events after the last sync`,
  );
  console.log(
    "| pods | churn/s | queue | synced | initial events/s (bare ceiling, ratio) | live events/s (mutations × watchers) | after-apply p50/p99 ms | e2e p50/p99 ms | matched | drops | ended with error | RSS peak MB | CPU ms/live event |",
  );
  console.log(
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
  );
  for (const n of watchPods) {
    if (!pods.includes(n)) {
      // The bare server needs the list bytes of this pod count.
      const d = await startDaemon(dir, { pods: n, churn: 0, relistPeriod: watchRelistPeriod });
      await python(["dump", "--socket", d.socket, "--out", `${dir}/list-${n}.bin`]);
      await stopProc(d.proc);
    }
    const ceiling = await bareWatchPhase(dir, { pods: n, watchers, processes });
    bareWatch.push({ pods: n, ...ceiling });
    for (const churn of [20, 200]) {
      // A large queue at 200 changes/s only grows a backlog the transport
      // cannot drain (see BENCHMARKS.md): run it with bounded queues only.
      for (const queue of queues.filter((q) => churn < 200 || q <= 1000)) {
        const w = await watchPhase(dir, {
          pods: n,
          churn,
          watchers,
          processes,
          duration: watchDuration,
          relistPeriod: watchRelistPeriod,
          queue,
        });
        watches.push(w);
        console.log(
          `| ${n} | ${churn} | ${queue} | ${w.synced}/${watchers} | ${
            f(w.initialEventsPerSec, 0)
          } (${f(ceiling.eventsPerSec, 0)}, ${
            f(w.initialEventsPerSec / ceiling.eventsPerSec, 2)
          }) | ${f(w.liveEventsPerSec, 0)} (${w.expectedLivePerSec}) | ${f(w.pipelineP50, 2)} / ${
            f(w.pipelineP99, 2)
          } | ${f(w.e2eP50, 2)} / ${
            f(w.e2eP99, 2)
          } | ${w.matched}/${w.liveEvents} | ${w.dropsMetric} | ${
            JSON.stringify(w.endedWithError)
          } | ${f(w.rssPeak)} | ${f(w.cpuPerLiveEvent, 3)} |`,
        );
      }
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  if (values.keep) console.log(`\n# total ${seconds} s; work dir ${dir}`);
  else {
    console.log(`\n# total ${seconds} s`);
    await Deno.remove(dir, { recursive: true });
  }
  if (values.json) {
    await Deno.writeTextFile(
      values.json,
      JSON.stringify({ model, lists, bareWatch, watches }, null, 2),
    );
  }
}

await main();
