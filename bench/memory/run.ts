/**
 * The daemon's memory, measured alone (issue 19): `pods-api simulate-runtime`
 * in one process, the daemon (`serve --container-runtime-endpoint`, with the
 * V8 flags every start path carries) in another. Memory figures do not
 * depend on the machine's load; the CPU figures of `--scaling` do.
 *
 * Default run, per pod count (`--pods 110,1000`): idle RSS (median of 10
 * samples from 60 s after start-up), peak RSS while h2load runs ListPods at 4 concurrent
 * streams (`--seconds` s), and peak RSS while 100 watchers (100 connections,
 * h2load) hold WatchPods open; each against the issue's target. The bundle's
 * idle RSS is read twice: once Deno has analysed the bundle before (its
 * cache is warm, as on every start but the first with a writable
 * `DENO_DIR`), and at a first start (an empty cache, as at every start of
 * the image, whose root is read-only; bench/_daemon_alone.ts says why it
 * differs).
 *
 * `--scaling`: idle RSS and relist CPU (daemon CPU per relist, no churn) at
 * 0, 110, 500, 1000 and 5000 pods, with the per-pod cost between them; then
 * the watch fan-out on 1000 pods at 1, 100 and 1000 watchers (Go client:
 * bench/go/loadclient): initial events/s, daemon CPU per event, RSS added
 * per watcher.
 *
 * `--snapshot`: also a heap snapshot of a fresh idle daemon of each size, broken
 * down by bench/memory/heap_breakdown.ts.
 *
 * Needs h2load (Debian `nghttp2-client`); `--scaling` also golang-go and
 * golang-google-grpc-dev.
 *
 * The daemon is the bundle as shipped (the image's command) unless `--source`;
 * `--v8-flags A,B` replaces the shipped V8 flags, to compare settings.
 *
 * Usage: `deno task bench:memory [--pods 110,1000] [--seconds 10] [--scaling] [--snapshot]
 *   [--source] [--v8-flags FLAGS] [--json FILE]`
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { cpuMs, rssMb, rssSampler } from "../_proc_usage.ts";
import {
  type DaemonAloneOptions,
  grpcFrame,
  h2load,
  loadAverage,
  startDaemonAlone,
} from "../_daemon_alone.ts";
import { sleep } from "../_child_process.ts";

/** What runs (`--source`: main.ts instead of the shipped bundle) and its V8 flags (`--v8-flags`). */
let shape: Pick<DaemonAloneOptions, "entry" | "v8Flags"> = {};

const ROOT = new URL("../../", import.meta.url).pathname;

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

/**
 * Median RSS over 5 s, 60 s after start-up: V8's memory reducer makes its
 * first idle collections about 30 s after start
 * (`--gc-memory-reducer-start-delay-ms`), and the figure is read after them.
 */
async function idleRss(pid: number): Promise<number> {
  await sleep(60_000);
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) {
    samples.push(await rssMb(pid));
    await sleep(500);
  }
  return median(samples);
}

/** One row of the report. */
interface Row {
  figure: string;
  value: string;
  target?: string;
  met?: boolean;
}

function table(rows: Row[]): string {
  const lines = ["| figure | daemon alone | target | met |", "|---|---:|---|---|"];
  for (const r of rows) {
    const met = r.met === undefined ? "" : r.met ? "met" : "**missed**";
    lines.push(`| ${r.figure} | ${r.value} | ${r.target ?? ""} | ${met} |`);
  }
  return lines.join("\n");
}

const IDLE_TARGET: Record<number, number> = { 110: 80, 1000: 120 };

/** A row of idle RSS, against the issue's target for that many pods when it has one. */
function idleRow(figure: string, pods: number, idle: number): Row {
  const target = IDLE_TARGET[pods];
  return {
    figure,
    value: `${idle.toFixed(1)} MB`,
    ...(target === undefined ? {} : { target: `<= ${target} MB`, met: idle <= target }),
  };
}

async function memoryRun(
  dir: string,
  pods: number,
  seconds: number,
  rows: Row[],
  raw: Record<string, unknown>,
  snapshot: boolean,
): Promise<void> {
  const body = `${dir}/empty.bin`;
  await Deno.writeFile(body, grpcFrame(new Uint8Array()));
  const alone = await startDaemonAlone({ ...shape, dir, tag: `mem-${pods}`, pods, churn: 0 });
  try {
    const pid = alone.daemon.pid;
    const idle = await idleRss(pid);
    rows.push(
      idleRow(
        `idle RSS, ${pods} pods${shape.entry === "bundle" ? ", bundle analysed before" : ""}`,
        pods,
        idle,
      ),
    );
    const listSampler = rssSampler(pid);
    const list = await h2load({
      socket: alone.socket,
      path: "/v1alpha1.Pods/ListPods",
      body,
      clients: 4,
      streams: 1,
      seconds,
    });
    const listPeak = await listSampler.stop();
    rows.push({
      figure: `peak RSS, ${pods} pods, h2load ListPods c=4 for ${seconds} s (${
        list.rps.toFixed(0)
      } req/s)`,
      value: `${listPeak.toFixed(1)} MB`,
      target: `<= idle + 32 MB (${(idle + 32).toFixed(0)} MB)`,
      met: listPeak <= idle + 32 && list.succeeded > 0,
    });
    await sleep(5000);
    const watchSampler = rssSampler(pid);
    const watch = await h2load({
      socket: alone.socket,
      path: "/v1alpha1.Pods/WatchPods",
      body,
      clients: 100,
      streams: 1,
      seconds,
    });
    const watchPeak = await watchSampler.stop();
    rows.push({
      figure: `peak RSS, ${pods} pods, 100 watchers connected for ${seconds} s`,
      value: `${watchPeak.toFixed(1)} MB`,
      target: `<= idle + 32 MB (${(idle + 32).toFixed(0)} MB)`,
      met: watchPeak <= idle + 32,
    });
    raw[`memory_${pods}`] = { idle, listPeak, watchPeak, list, watch };
  } finally {
    await alone.stop();
  }
  if (shape.entry === "bundle") {
    // The image's first start (its root, its layer of Deno's analysis): the
    // target's row; then a first start with nothing analysed, for scale.
    const firstStarts = [
      { cache: "image", tag: "image", figure: "first start of the image (its layer 4)" },
      {
        cache: "cold",
        tag: "cold",
        figure: "first start, empty DENO_DIR (Deno parses the bundle)",
      },
    ] as const;
    for (const first of firstStarts) {
      const alone = await startDaemonAlone({
        ...shape,
        dir,
        tag: `${first.tag}-${pods}`,
        pods,
        churn: 0,
        analysisCache: first.cache,
      });
      try {
        const idle = await idleRss(alone.daemon.pid);
        const row = idleRow(`idle RSS, ${pods} pods, ${first.figure}`, pods, idle);
        rows.push(first.cache === "image" ? row : { figure: row.figure, value: row.value });
        raw[`memory_${pods}_first_start_${first.tag}`] = { idle };
      } finally {
        await alone.stop();
      }
    }
  }
  if (snapshot) raw[`heap_${pods}`] = await heapBreakdown(dir, pods);
}

/** A heap snapshot of a fresh idle daemon (writing one inflates RSS: never mixed with the figures). */
async function heapBreakdown(dir: string, pods: number): Promise<string> {
  const base = `${dir}/heap-${pods}`;
  const alone = await startDaemonAlone({
    ...shape,
    dir,
    tag: `heap-${pods}`,
    pods,
    churn: 0,
    heapSnapshots: base,
  });
  try {
    await sleep(10_000);
    alone.daemon.child.kill("SIGUSR2");
    for (let i = 0; i < 600; i++) {
      const log = await Deno.readTextFile(`${dir}/daemon-heap-${pods}.log`).catch(() => "");
      if (log.includes(`snapshot ${base}-0`)) break;
      await sleep(500);
    }
  } finally {
    await alone.stop();
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--v8-flags=--max-old-space-size=4096",
      `${ROOT}bench/memory/heap_breakdown.ts`,
      `${base}-0.heapsnapshot`,
      "--spaces",
      `${base}-0.spaces.json`,
    ],
    stdout: "piped",
  }).output();
  return `Heap of the idle ${pods}-pod daemon:\n\n${new TextDecoder().decode(out.stdout)}`;
}

/** Relists of the CRI source so far (`pods_api_relist_duration_seconds_count`). */
async function relists(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("pods_api_relist_duration_seconds_count"));
  return Number(line?.slice(line.lastIndexOf(" ") + 1) ?? NaN);
}

async function buildLoadClient(dir: string): Promise<string> {
  const out = `${dir}/loadclient`;
  const result = await new Deno.Command("go", {
    args: ["build", "-o", out, "./bench/go/loadclient"],
    cwd: ROOT,
    env: { GO111MODULE: "off", GOPATH: `${dir}/gopath:/usr/share/gocode` },
    stderr: "piped",
  }).output();
  if (!result.success) {
    throw new Error(
      `go build failed (golang-go, golang-google-grpc-dev): ${
        new TextDecoder().decode(result.stderr)
      }`,
    );
  }
  return out;
}

async function scalingRun(dir: string, raw: Record<string, unknown>): Promise<string> {
  const lines = [
    "| pods | idle RSS MB | RSS per pod vs previous row, KB | relist CPU per relist, ms | relist CPU per pod, µs |",
    "|---:|---:|---:|---:|---:|",
  ];
  let prev: { pods: number; rss: number } | undefined;
  const scaling: unknown[] = [];
  for (const pods of [0, 110, 500, 1000, 5000]) {
    const alone = await startDaemonAlone({ ...shape, dir, tag: `scale-${pods}`, pods, churn: 0 });
    try {
      const rss = await idleRss(alone.daemon.pid);
      // No churn: each relist lists the runtime and finds nothing changed.
      // The daemon's whole CPU over 20 s, divided by the relists it made
      // (a relist longer than the period makes fewer than 20).
      const r0 = await relists(alone.metricsPort);
      const c0 = await cpuMs(alone.daemon.pid);
      await sleep(20_000);
      const cpu = await cpuMs(alone.daemon.pid) - c0;
      const perRelist = cpu / Math.max(1, await relists(alone.metricsPort) - r0);
      const perPod = prev === undefined
        ? ""
        : ((rss - prev.rss) * 1024 / (pods - prev.pods)).toFixed(1);
      lines.push(
        `| ${pods} | ${rss.toFixed(1)} | ${perPod} | ${perRelist.toFixed(2)} | ${
          pods === 0 ? "" : (perRelist * 1000 / pods).toFixed(1)
        } |`,
      );
      scaling.push({ pods, rss, perRelistMs: perRelist });
      prev = { pods, rss };
    } finally {
      await alone.stop();
    }
  }
  raw.scaling = scaling;
  const loadclient = await buildLoadClient(dir);
  const fan = [
    "",
    "| watchers (1000 pods) | initial events/s | daemon CPU per event, µs | RSS with watchers synced, MB | RSS per watcher, KB |",
    "|---:|---:|---:|---:|---:|",
  ];
  const fanRaw: unknown[] = [];
  for (const watchers of [1, 100, 1000]) {
    const alone = await startDaemonAlone({
      ...shape,
      dir,
      tag: `fan-${watchers}`,
      pods: 1000,
      churn: 0,
      flags: ["--max-watchers", "2000"],
    });
    try {
      const idle = await idleRss(alone.daemon.pid);
      const c0 = await cpuMs(alone.daemon.pid);
      const sampler = rssSampler(alone.daemon.pid);
      const out = await new Deno.Command(loadclient, {
        args: ["watch", "-socket", alone.socket, "-watchers", String(watchers), "-duration", "3"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const peak = await sampler.stop();
      const cpu = await cpuMs(alone.daemon.pid) - c0;
      const r = JSON.parse(new TextDecoder().decode(out.stdout)) as {
        "initial_events": number;
        "initial_events_per_s": number;
        synced: number;
      };
      fan.push(
        `| ${watchers} | ${r.initial_events_per_s.toFixed(0)} | ${
          (cpu * 1000 / Math.max(1, r.initial_events)).toFixed(2)
        } | ${peak.toFixed(1)} | ${((peak - idle) * 1024 / watchers).toFixed(1)} |`,
      );
      fanRaw.push({ watchers, idle, peak, cpuMs: cpu, ...r });
    } finally {
      await alone.stop();
    }
  }
  raw.fanout = fanRaw;
  return [...lines, ...fan].join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "110,1000" },
      seconds: { type: "string", default: "10" },
      scaling: { type: "boolean", default: false },
      snapshot: { type: "boolean", default: false },
      json: { type: "string" },
      source: { type: "boolean", default: false },
      "v8-flags": { type: "string" },
    },
  });
  shape = {
    entry: values.source ? "source" : "bundle",
    ...(values["v8-flags"] === undefined ? {} : { v8Flags: `--v8-flags=${values["v8-flags"]}` }),
  };
  const dir = await Deno.makeTempDir({ prefix: "pods-api-memory-bench-" });
  const rows: Row[] = [];
  const raw: Record<string, unknown> = { loadBefore: await loadAverage() };
  try {
    for (const pods of values.pods!.split(",").filter((p) => p !== "").map(Number)) {
      console.error(`[memory-bench] ${pods} pods`);
      await memoryRun(dir, pods, Number(values.seconds), rows, raw, values.snapshot!);
    }
    let scaling = "";
    if (values.scaling) {
      console.error("[memory-bench] scaling");
      scaling = await scalingRun(dir, raw);
    }
    raw.loadAfter = await loadAverage();
    console.log(
      `Deno ${Deno.version.deno}, daemon alone (simulate-runtime in its own process), ` +
        `${shape.entry === "source" ? "main.ts from source" : "the bundle as shipped"}` +
        `${shape.v8Flags === undefined ? "" : ` with ${shape.v8Flags}`}, ` +
        `load average ${raw.loadBefore} before, ${raw.loadAfter} after\n`,
    );
    console.log(table(rows));
    if (scaling !== "") console.log(`\n${scaling}`);
    for (const [key, text] of Object.entries(raw)) {
      if (key.startsWith("heap_")) console.log(`\n${text}`);
    }
    if (values.json) await Deno.writeTextFile(values.json, JSON.stringify({ rows, raw }, null, 2));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

await main();
