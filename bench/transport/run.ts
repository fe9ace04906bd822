/**
 * The transport benchmark (issue 10 item 7): the daemon side by side with a
 * Go reference server (bench/go/refserver, grpc-go 1.33 from Debian, "the
 * kubelet's Go stack at its best") that replays the daemon's own response
 * bytes, driven by the same clients in the same run: the Go load client
 * (bench/go/loadclient) and the Python grpcio client of bench/load
 * (client.py). Prints a markdown table of daemon / Go ratios with the issue's
 * targets.
 *
 * Phases, per pod count (110, 1000): the daemon (bench/load/sim_daemon.ts
 * `--direct`, simulated node, no churn) starts, its ListPods, GetPod and
 * WatchPods bytes are dumped and the Go server starts on them; then
 * ListPods at c=1 and c=4 and GetPod at c=1 from both clients, idle RSS, and
 * at 1000 pods the watch fan-out (100 watchers started together, Go client)
 * and peak RSS under 4 concurrent ListPods for 10 s plus 100 watchers.
 * Last, live delivery: 200 changes/s on 110 pods to 100 watchers, per-event
 * latency from each server's change timeline to the client's arrival time,
 * and drops. Server CPU comes from /proc/<pid>/stat around each phase.
 *
 * Needs: golang-go, golang-google-grpc-dev, python3-grpcio.
 *
 * Usage: `deno run --allow-read --allow-write --allow-net --allow-env --allow-sys --allow-run
 *   bench/transport/run.ts [--quick] [--duration 3] [--repeat 2] [--json FILE] [--keep]`
 *
 * Throughput phases (unary, fan-out) run `--repeat` times per server, daemon
 * and Go interleaved (ABBA), and keep each server's best run.
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { cpuMs, rssMb, rssSampler } from "../_proc_usage.ts";
import { latencies, readTimeline } from "../_live_latency.ts";
import { type Proc, runCommand, sleep, spawnProc, stopProc } from "../_child_process.ts";
import { metricValue, startSimDaemon } from "../_sim_daemon.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const PY_CLIENT = `${ROOT}bench/load/client.py`;
const PYTHON = "/usr/bin/python3";
const LIST = "/v1alpha1.Pods/ListPods";
const GET = "/v1alpha1.Pods/GetPod";

async function buildGo(pkg: string, dir: string): Promise<string> {
  const out = `${dir}/${pkg.split("/").at(-1)}`;
  await runCommand("go", ["build", "-o", out, pkg], 600_000).catch((err) => {
    throw new Error(`${err.message}\n(needs golang-go and golang-google-grpc-dev)`);
  });
  return out;
}

/** A server under test. */
interface Server {
  readonly name: "daemon" | "go";
  readonly child: Proc;
  readonly socket: string;
  /** The daemon's metrics port. */
  readonly port?: number;
  readonly timeline?: string;
}

async function startDaemon(
  dir: string,
  tag: string,
  options: { pods: number; churn: number; relistPeriod: string; queue: number },
): Promise<Server> {
  const d = await startSimDaemon({
    ...options,
    direct: true,
    socket: `${dir}/daemon-${tag}.sock`,
    timeline: `${dir}/daemon-timeline-${tag}.txt`,
    logPath: `${dir}/daemon-${tag}.log`,
  });
  return { name: "daemon", child: d.proc, socket: d.socket, port: d.port, timeline: d.timeline };
}

async function startGo(
  refserver: string,
  dir: string,
  dump: string,
  tag: string,
  options: { liveRate?: number; queue?: number } = {},
): Promise<Server> {
  const socket = `${dir}/go-${tag}.sock`;
  const timeline = `${dir}/go-timeline-${tag}.txt`;
  const child = spawnProc(refserver, [
    "-socket",
    socket,
    "-list",
    `${dump}/list.bin`,
    "-get",
    `${dump}/get.bin`,
    "-watch",
    `${dump}/watch.bin`,
    "-live-rate",
    String(options.liveRate ?? 0),
    "-queue",
    String(options.queue ?? 100),
    "-timeline",
    timeline,
  ], `${dir}/go-${tag}.log`);
  const line = await child.firstLine;
  if (!line.includes('"ready":true')) throw new Error(`refserver did not start: ${line}`);
  return { name: "go", child, socket, timeline };
}

interface UnaryOut {
  ok: number;
  errors: Record<string, number>;
  rps: number;
  "p50_ms": number | null;
  "p99_ms": number | null;
  "mean_bytes": number;
}

interface UnaryFigures {
  rps: number;
  p50: number;
  p99: number;
  cpuPerReqMs: number;
  errors: number;
}

async function unary(
  server: Server,
  client: "go" | "py",
  tools: Tools,
  options: { method: string; concurrency: number; duration: number; uid?: string },
): Promise<UnaryFigures> {
  const cpu0 = await cpuMs(server.child.pid);
  let out: UnaryOut;
  if (client === "go") {
    out = JSON.parse(
      await runCommand(tools.loadclient, [
        "unary",
        "-socket",
        server.socket,
        "-method",
        options.method,
        ...(options.uid ? ["-uid", options.uid] : []),
        "-duration",
        String(options.duration),
        "-concurrency",
        String(options.concurrency),
      ]),
    );
  } else {
    const args = [
      PY_CLIENT,
      "unary",
      "--socket",
      server.socket,
      "--method",
      options.method,
      "--duration",
      String(options.duration),
      "--concurrency",
      String(options.concurrency),
    ];
    if (options.uid) {
      const file = `${tools.dir}/uid.txt`;
      await Deno.writeTextFile(file, options.uid + "\n");
      args.push("--uids", file);
    }
    out = JSON.parse(await runCommand(PYTHON, args));
  }
  const cpu1 = await cpuMs(server.child.pid);
  return {
    rps: out.rps,
    p50: out.p50_ms ?? NaN,
    p99: out.p99_ms ?? NaN,
    cpuPerReqMs: (cpu1 - cpu0) / Math.max(1, out.ok),
    errors: Object.values(out.errors).reduce((a, b) => a + b, 0),
  };
}

interface WatchOut {
  synced: number;
  "initial_events": number;
  "initial_seconds": number;
  "initial_events_per_s": number;
  "live_events": number;
  "live_seconds": number;
  ended: Record<string, number>;
  "synced_at_ns": number;
}

async function goWatch(
  server: Server,
  tools: Tools,
  options: { watchers: number; duration: number; out?: string },
): Promise<{ out: WatchOut; cpuMs: number }> {
  const cpu0 = await cpuMs(server.child.pid);
  const out = JSON.parse(
    await runCommand(tools.loadclient, [
      "watch",
      "-socket",
      server.socket,
      "-watchers",
      String(options.watchers),
      "-duration",
      String(options.duration),
      ...(options.out ? ["-out", options.out] : []),
    ]),
  ) as WatchOut;
  return { out, cpuMs: (await cpuMs(server.child.pid)) - cpu0 };
}

/**
 * The order of repeated runs: daemon, Go, Go, daemon, ... (ABBA), so that a
 * drift in what else the shared CPUs do weighs on both servers alike.
 */
function abba<T>(a: T, b: T, repeat: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < repeat; i++) out.push(...(i % 2 === 0 ? [a, b] : [b, a]));
  return out;
}

interface Tools {
  dir: string;
  refserver: string;
  loadclient: string;
}

/** One row of the report: a figure for each server, how they compare, the target. */
interface Row {
  name: string;
  daemon: number;
  go: number;
  unit: string;
  /** Whether a higher figure is better (ratios read "daemon does x times Go"). */
  higherBetter: boolean;
  target?: string;
  met?: boolean;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "n/a";
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  if (Math.abs(n) >= 1) return n.toFixed(2);
  return n.toPrecision(2);
}

function table(rows: Row[]): string {
  const out = [
    "| figure | daemon | Go | daemon / Go | target | met |",
    "|---|---:|---:|---:|---|---|",
  ];
  for (const r of rows) {
    const ratio = r.daemon === 0 && r.go === 0 ? "same" : `${fmt(r.daemon / r.go)}x`;
    out.push(
      `| ${r.name} | ${fmt(r.daemon)} ${r.unit} | ${fmt(r.go)} ${r.unit} | ` +
        `${ratio} | ${r.target ?? ""} | ${
          r.met === undefined ? "" : r.met ? "met" : "**missed**"
        } |`,
    );
  }
  return out.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      quick: { type: "boolean", default: false },
      duration: { type: "string" },
      json: { type: "string" },
      keep: { type: "boolean", default: false },
      repeat: { type: "string" },
    },
  });
  const quick = values.quick!;
  const duration = Number(values.duration ?? (quick ? 1 : 3));
  // Throughput phases run `repeat` times per server (ABBA) and keep the best
  // run: the CPUs are shared, and the best run is the least disturbed one.
  const repeat = Number(values.repeat ?? (quick ? 1 : 2));
  const memorySeconds = quick ? 3 : 10;
  const liveSeconds = quick ? 3 : 10;
  const watchers = 100;
  const dir = await Deno.makeTempDir({ prefix: "pods-api-transport-bench-" });
  const log = (s: string) => console.error(`[transport-bench] ${s}`);
  log(`work dir ${dir}`);
  const goEnv = { GO111MODULE: "off", GOPATH: `${dir}/gopath:/usr/share/gocode` };
  for (const [k, v] of Object.entries(goEnv)) Deno.env.set(k, v);
  const tools: Tools = {
    dir,
    refserver: await buildGo("./bench/go/refserver", dir),
    loadclient: await buildGo("./bench/go/loadclient", dir),
  };
  const rows: Row[] = [];
  const raw: Record<string, unknown> = {};
  const servers: Server[] = [];
  const cleanup = async () => {
    for (const s of servers.splice(0)) await stopProc(s.child);
  };

  try {
    for (const pods of [110, 1000]) {
      log(`${pods} pods: starting the daemon, dumping its bytes, starting the Go server`);
      const daemon = await startDaemon(dir, `${pods}`, {
        pods,
        churn: 0,
        relistPeriod: "1s",
        queue: 100,
      });
      servers.push(daemon);
      const dump = `${dir}/dump-${pods}`;
      await Deno.mkdir(dump);
      const dumped = JSON.parse(
        await runCommand(tools.loadclient, ["dump", "-socket", daemon.socket, "-out", dump]),
      ) as { uid: string; "list_bytes": number; pods: number };
      raw[`dump_${pods}`] = dumped;
      const go = await startGo(tools.refserver, dir, dump, `${pods}`);
      servers.push(go);
      await sleep(2000);
      const idle = { daemon: await rssMb(daemon.child.pid), go: await rssMb(go.child.pid) };
      raw[`idle_rss_${pods}`] = idle;
      rows.push({
        name: `idle RSS, ${pods} pods`,
        daemon: idle.daemon,
        go: idle.go,
        unit: "MB",
        higherBetter: false,
        ...(pods === 110 ? { target: "daemon <= 60 MB", met: idle.daemon <= 60 } : {}),
      });

      const figures: Record<string, Record<string, UnaryFigures>> = {};
      const phases = [
        { key: "ListPods c=1", method: LIST, concurrency: 1 },
        { key: "ListPods c=4", method: LIST, concurrency: 4 },
        { key: "GetPod c=1", method: GET, concurrency: 1, uid: dumped.uid },
      ];
      for (const client of ["go", "py"] as const) {
        for (const phase of phases) {
          const key = `${phase.key} ${pods} pods, ${client === "go" ? "Go" : "grpcio"} client`;
          figures[key] = {};
          for (const server of abba(daemon, go, repeat)) {
            log(`${key}: ${server.name}`);
            const f = await unary(server, client, tools, {
              method: phase.method,
              concurrency: phase.concurrency,
              duration,
              ...(phase.uid ? { uid: phase.uid } : {}),
            });
            const best = figures[key]![server.name];
            if (best === undefined || f.rps > best.rps) figures[key]![server.name] = f;
          }
          const d = figures[key]!.daemon!;
          const g = figures[key]!.go!;
          const isGet = phase.method === GET;
          const target = isGet ? 0.8 : 1.0;
          rows.push({
            name: `${key}: requests/s`,
            daemon: d.rps,
            go: g.rps,
            unit: "/s",
            higherBetter: true,
            target: `>= ${target.toFixed(1)}x Go`,
            met: d.rps >= target * g.rps,
          });
          rows.push({
            name: `${key}: p99 latency`,
            daemon: d.p99,
            go: g.p99,
            unit: "ms",
            higherBetter: false,
          });
          rows.push({
            name: `${key}: server CPU per request`,
            daemon: d.cpuPerReqMs * 1000,
            go: g.cpuPerReqMs * 1000,
            unit: "µs",
            higherBetter: false,
          });
          if (d.errors + g.errors > 0) log(`${key}: errors daemon ${d.errors}, go ${g.errors}`);
        }
      }
      raw[`unary_${pods}`] = figures;

      if (pods === 1000) {
        const fan: Record<string, { out: WatchOut; cpuMs: number }> = {};
        for (const server of abba(daemon, go, repeat)) {
          log(`watch fan-out, ${watchers} watchers on ${pods} pods: ${server.name}`);
          const f = await goWatch(server, tools, { watchers, duration: 0 });
          const best = fan[server.name];
          if (best === undefined || f.out.initial_events_per_s > best.out.initial_events_per_s) {
            fan[server.name] = f;
          }
        }
        raw.fanout = fan;
        const fd = fan.daemon!;
        const fg = fan.go!;
        rows.push({
          name: `watch fan-out, ${watchers} watchers x ${pods} pods: initial events/s`,
          daemon: fd.out.initial_events_per_s,
          go: fg.out.initial_events_per_s,
          unit: "/s",
          higherBetter: true,
          target: ">= 1.0x Go",
          met: fd.out.initial_events_per_s >= fg.out.initial_events_per_s &&
            fd.out.synced === watchers,
        });
        rows.push({
          name: "watch fan-out: server CPU per event",
          daemon: (fd.cpuMs * 1000) / Math.max(1, fd.out.initial_events),
          go: (fg.cpuMs * 1000) / Math.max(1, fg.out.initial_events),
          unit: "µs",
          higherBetter: false,
        });

        const peak: Record<string, number> = {};
        for (const server of [daemon, go]) {
          log(
            `memory: 4 concurrent ListPods for ${memorySeconds} s + ${watchers} watchers: ${server.name}`,
          );
          const sampler = rssSampler(server.child.pid);
          await Promise.all([
            unary(server, "go", tools, { method: LIST, concurrency: 4, duration: memorySeconds }),
            goWatch(server, tools, { watchers, duration: memorySeconds }),
          ]);
          peak[server.name] = await sampler.stop();
        }
        raw.peak_rss = peak;
        rows.push({
          name: `peak RSS, ${pods} pods, 4 ListPods for ${memorySeconds} s + ${watchers} watchers`,
          daemon: peak.daemon!,
          go: peak.go!,
          unit: "MB",
          higherBetter: false,
          target: `daemon <= idle + 64 MB (${fmt(idle.daemon + 64)} MB)`,
          met: peak.daemon! <= idle.daemon + 64,
        });
      }
      await cleanup();
    }

    // Live delivery: 200 changes/s on 110 pods to 100 watchers.
    const livePods = 110;
    const rate = 200;
    const queue = 1000;
    const live: Record<string, unknown> = {};
    const liveFigures: Record<string, {
      p50: number;
      p99: number;
      cpuPerEventUs: number;
      drops: number;
      delivered: number;
    }> = {};
    for (const name of ["daemon", "go"] as const) {
      log(`live: ${rate} changes/s on ${livePods} pods, ${watchers} watchers: ${name}`);
      const server = name === "daemon"
        ? await startDaemon(dir, "live", {
          pods: livePods,
          churn: rate,
          relistPeriod: "10ms",
          queue,
        })
        : await startGo(tools.refserver, dir, `${dir}/dump-${livePods}`, "live", {
          liveRate: rate,
          queue,
        });
      servers.push(server);
      const arrivals = `${dir}/arrivals-${name}.txt`;
      const w = await goWatch(server, tools, { watchers, duration: liveSeconds, out: arrivals });
      const dropsMetric = server.port === undefined
        ? 0
        : await metricValue(server.port, "kubelet_pod_watch_events_dropped_total");
      await stopProc(server.child);
      servers.splice(servers.indexOf(server), 1);
      const goStats = name === "go"
        ? JSON.parse(server.child.lines.at(-1) ?? "{}") as { "dropped_watchers"?: number }
        : {};
      const lat = await latencies(
        arrivals,
        await readTimeline(server.timeline!, server.name === "daemon" ? "node" : "go"),
        w.out.synced_at_ns / 1e6,
      );
      const ended = w.out.ended.RESOURCE_EXHAUSTED ?? 0;
      liveFigures[name] = {
        p50: lat.p50,
        p99: lat.p99,
        cpuPerEventUs: (w.cpuMs * 1000) / Math.max(1, w.out.live_events),
        drops: dropsMetric + (goStats.dropped_watchers ?? 0) + ended,
        delivered: w.out.live_events / Math.max(0.001, w.out.live_seconds),
      };
      live[name] = { watch: w.out, cpuMs: w.cpuMs, latency: lat, dropsMetric, goStats };
    }
    raw.live = live;
    const ld = liveFigures.daemon!;
    const lg = liveFigures.go!;
    rows.push({
      name: `live ${rate} changes/s x ${watchers} watchers: p50 latency`,
      daemon: ld.p50,
      go: lg.p50,
      unit: "ms",
      higherBetter: false,
    });
    rows.push({
      name: `live ${rate} changes/s x ${watchers} watchers: p99 latency`,
      daemon: ld.p99,
      go: lg.p99,
      unit: "ms",
      higherBetter: false,
      target: "daemon p99 < 20 ms",
      met: ld.p99 < 20,
    });
    rows.push({
      name: "live: events delivered/s (all watchers)",
      daemon: ld.delivered,
      go: lg.delivered,
      unit: "/s",
      higherBetter: true,
    });
    rows.push({
      name: "live: drops (dropped events + watchers ended RESOURCE_EXHAUSTED)",
      daemon: ld.drops,
      go: lg.drops,
      unit: "",
      higherBetter: false,
      target: "no drops",
      met: ld.drops === 0,
    });
    rows.push({
      name: "live: server CPU per delivered event",
      daemon: ld.cpuPerEventUs,
      go: lg.cpuPerEventUs,
      unit: "µs",
      higherBetter: false,
    });
  } finally {
    await cleanup();
    if (!values.keep) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }

  const header = [
    `## Transport: daemon vs Go reference (grpc-go 1.33), one run`,
    "",
    `Deno ${Deno.version.deno}; ${navigator.hardwareConcurrency} CPUs; unary phases ${duration} s ` +
    `each, best of ${repeat} per server (daemon and Go interleaved ABBA); the daemon is bench/load/sim_daemon.ts --direct; the Go server replays the ` +
    `daemon's dumped bytes. Ratios are daemon / Go (for requests/s and events/s higher is ` +
    `better for the daemon; for latency, CPU and RSS lower is). Live latency runs from the ` +
    `change (daemon: applied to the simulated node, so it includes up to one 10 ms relist ` +
    `period; Go: handed to its hub) to the Go client's receipt.`,
    "",
  ];
  console.log([...header, table(rows)].join("\n"));
  if (values.json) {
    await Deno.writeTextFile(values.json, JSON.stringify({ rows, raw }, null, 2) + "\n");
  }
}

await main();
