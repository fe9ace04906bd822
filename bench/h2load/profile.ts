/**
 * Where the daemon's CPU goes while h2load drives one unary method: starts
 * the daemon alone (as bench/h2load/run.ts does) under `deno run --cpu-prof`,
 * runs h2load for `--seconds`, stops the daemon and prints the functions with
 * the most self time in its .cpuprofile.
 *
 * `--method idle` sends no request: the profile is then the daemon's relists
 * alone (shorten them with `--relist-period`; `--churn` changes the simulated
 * node that many times a second, its runtime catching up every `--sync-period`). `--method WatchPods` has the
 * Go client (bench/go/loadclient, built here) open `--clients` watchers
 * together, each on its own connection, again and again: the profile is the
 * fan-out of initial lists.
 *
 * Usage: `deno run -A bench/h2load/profile.ts [--pods 110] [--method GetPod|ListPods|WatchPods|idle]
 *   [--clients 1] [--seconds 10] [--top 30] [--server-cpu 0] [--client-cpu 1]
 *   [--relist-period 1s] [--churn 0] [--sync-period 100ms] [--keep FILE]`
 *
 * `--keep` copies the .cpuprofile to FILE (for Chrome's DevTools, or a
 * reading of inclusive times).
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { encodeGetPodRequest } from "../../src/proto/mod.ts";
import { PodsClient } from "../../src/client/mod.ts";
import { type DaemonAlone, grpcFrame, h2load, startDaemonAlone } from "../_daemon_alone.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * @param profile A V8 .cpuprofile.
 * @returns Self time by function (name, file and line), ms, most first.
 */
function selfTimes(profile: CpuProfile): [string, number][] {
  const nameOf = new Map<number, string>();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const file = f.url.replace(/^.*\/(src|bench|ext|node)\//, "$1/");
    nameOf.set(node.id, `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`);
  }
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const name = nameOf.get(id) ?? "?";
    totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...totals].sort((a, b) => b[1] - a[1]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "110" },
      method: { type: "string", default: "GetPod" },
      clients: { type: "string", default: "1" },
      seconds: { type: "string", default: "10" },
      top: { type: "string", default: "30" },
      "server-cpu": { type: "string", default: "0" },
      "client-cpu": { type: "string", default: "1" },
      "daemon-root": { type: "string" },
      "relist-period": { type: "string", default: "1s" },
      churn: { type: "string", default: "0" },
      "sync-period": { type: "string", default: "100ms" },
      keep: { type: "string" },
    },
  });
  const dir = await Deno.makeTempDir({ prefix: "pods-api-h2load-profile-" });
  const profDir = `${dir}/prof`;
  const alone = await startDaemonAlone({
    dir,
    tag: "profile",
    pods: Number(values.pods),
    churn: Number(values.churn),
    relistPeriod: values["relist-period"],
    runtimeFlags: ["--sync-period", values["sync-period"]],
    daemonCpu: Number(values["server-cpu"]),
    runtimeCpu: Number(values["client-cpu"]),
    denoFlags: ["--cpu-prof", "--cpu-prof-dir", profDir],
    ...(values["daemon-root"] === undefined ? {} : { daemonRoot: values["daemon-root"] }),
  });
  try {
    if (values.method === "idle") {
      await new Promise((r) => setTimeout(r, 1000 * Number(values.seconds)));
    } else await drive(alone, dir, values);
  } finally {
    await alone.stop();
  }
  await report(profDir, Number(values.top), values.keep);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

async function drive(
  alone: DaemonAlone,
  dir: string,
  values: { method: string; clients: string; seconds: string; pods: string; "client-cpu": string },
): Promise<void> {
  if (values.method === "WatchPods") return await driveWatchers(alone, dir, values);
  const body = `${dir}/body.bin`;
  const request = values.method === "GetPod"
    ? encodeGetPodRequest(await firstUid(alone.socket))
    : new Uint8Array();
  await Deno.writeFile(body, grpcFrame(request));
  const r = await h2load({
    socket: alone.socket,
    path: `/v1alpha1.Pods/${values.method}`,
    body,
    clients: Number(values.clients),
    streams: 1,
    seconds: Number(values.seconds),
    cpu: Number(values["client-cpu"]),
  });
  console.log(`${values.method} c=${values.clients}, ${values.pods} pods: ${r.rps} req/s`);
  // The statuses the calls ended with: a profile of failing calls profiles the wrong path.
  const metrics = await (await fetch(`http://127.0.0.1:${alone.metricsPort}/metrics`)).text();
  console.log(
    metrics.split("\n").filter((l) => /^kubelet_pod_requests_total/.test(l)).join("\n"),
  );
}

/** Has the Go client sync `--clients` watchers at once, until `--seconds` have passed. */
async function driveWatchers(
  alone: DaemonAlone,
  dir: string,
  values: { clients: string; seconds: string; pods: string; "client-cpu": string },
): Promise<void> {
  const loadclient = `${dir}/loadclient`;
  const built = await new Deno.Command("go", {
    args: ["build", "-o", loadclient, "./bench/go/loadclient"],
    cwd: new URL("../../", import.meta.url).pathname,
    env: { GO111MODULE: "off", GOPATH: `${dir}/gopath:/usr/share/gocode` },
    stderr: "piped",
  }).output();
  if (!built.success) throw new Error(new TextDecoder().decode(built.stderr));
  const end = performance.now() + 1000 * Number(values.seconds);
  let rounds = 0;
  let events = 0;
  while (performance.now() < end) {
    const out = await new Deno.Command("taskset", {
      args: [
        "-c",
        values["client-cpu"],
        loadclient,
        "watch",
        "-socket",
        alone.socket,
        "-watchers",
        values.clients,
        "-duration",
        "0.1",
      ],
      stdout: "piped",
    }).output();
    const result = JSON.parse(new TextDecoder().decode(out.stdout)) as { initial_events: number };
    events += result.initial_events;
    rounds++;
  }
  console.log(
    `WatchPods x${values.clients}, ${values.pods} pods: ${rounds} rounds, ${events} events`,
  );
}

/** Prints the functions with the most self time in the daemon's profile, and keeps it if asked. */
async function report(profDir: string, top: number, keep?: string): Promise<void> {
  const files: string[] = [];
  for await (const e of Deno.readDir(profDir)) {
    if (e.name.endsWith(".cpuprofile")) files.push(e.name);
  }
  const [file] = files;
  if (file === undefined) throw new Error(`no .cpuprofile in ${profDir}`);
  if (keep !== undefined) await Deno.copyFile(`${profDir}/${file}`, keep);
  const profile = JSON.parse(await Deno.readTextFile(`${profDir}/${file}`)) as CpuProfile;
  const times = selfTimes(profile);
  const total = times.reduce((sum, [, ms]) => sum + ms, 0);
  for (const [name, ms] of times.slice(0, top)) {
    console.log(
      `${(100 * ms / total).toFixed(1).padStart(5)} %  ${ms.toFixed(0).padStart(6)} ms  ${name}`,
    );
  }
}

/** The UID of one pod the daemon serves: the first of its list. */
async function firstUid(socket: string): Promise<string> {
  using client = new PodsClient({ socket });
  const [pod] = await client.listPods();
  if (pod === undefined) throw new Error("the daemon serves no pod");
  return pod.metadata.uid;
}

await main();
