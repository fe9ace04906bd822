/**
 * Process lookups (issue 40): what a lookup costs the daemon, and what the
 * process index adds to a relist.
 *
 * 1. Lookups. `pods-api serve --simulate` (a process of its own: the
 *    simulated node, its CRI runtime and its `/proc`, churn 0) at each size;
 *    the bench, another process, asks `Get` by host PID, cgroup ID, cgroup
 *    path and mount namespace of the node's running containers, `--concurrency`
 *    calls in flight on one connection, and `Get` by container ID for
 *    comparison (the lookup that existed before). Per kind: lookups per second
 *    (wall) and the daemon's CPU per lookup (its utime + stime over the run,
 *    simulator included, which idles at churn 0).
 * 2. The relist's added cost, in this process: the CRI source relisting the
 *    simulated runtime while one pod is replaced each round, with the verbose
 *    `ContainerStatus` (init PID and cgroup) as shipped, and with it turned off
 *    (the runtime's answer stripped of `info`); then the process index's
 *    rebuild at the first lookup after each relist, and its first build.
 *
 * The relists run twice, the first pass only warming the JIT up.
 *
 * Run: deno task bench:whois [--pods 110,1000] [--lookups 4000] [--concurrency 8] [--rounds 30]
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { type PodKey, PodQueryClient, PodsClient } from "../src/client/mod.ts";
import { removeKubeletPod, runKubeletPod } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { SIM_CGROUP_ROOT, SimProcFs } from "../src/sim/runtime/sim_procfs.ts";
import { CriPodSource, type RuntimeReader } from "../src/sources/cri/mod.ts";
import { ProcessIndex } from "../src/sources/process/mod.ts";
import { cpuMs } from "./_proc_usage.ts";
import { NO_RATE_LIMIT_FLAGS } from "./_sim_daemon.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    pods: { type: "string", default: "110,1000" },
    lookups: { type: "string", default: "4000" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "30" },
  },
});
const SIZES = values.pods.split(",").map(Number);
const LOOKUPS = Number(values.lookups);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const MAIN = new URL("../main.ts", import.meta.url).pathname;
/** Where the simulated runtime's init PIDs start (SimCriRuntime). */
const FIRST_SIM_PID = 100_000;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** The daemon on a simulated node of `pods` pods, in a process of its own. */
async function startDaemon(pods: number, socket: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      "-A",
      MAIN,
      "serve",
      "--simulate",
      "--simulate-pods",
      String(pods),
      "--simulate-churn",
      "0",
      "--socket",
      socket,
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
      ...NO_RATE_LIMIT_FLAGS,
      "--log-level",
      "warn",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  using client = new PodsClient({ socket });
  for (let i = 0;; i++) {
    try {
      if ((await client.listPods()).length >= pods) break;
    } catch { /* not up yet */ }
    if (i > 600) throw new Error("the daemon did not come up");
    await new Promise((r) => setTimeout(r, 100));
  }
  return child;
}

/** Runs `keys` as lookups, `CONCURRENCY` in flight; returns lookups/s and daemon CPU µs each. */
async function measure(query: PodQueryClient, pid: number, keys: PodKey[]) {
  let next = 0;
  const worker = async () => {
    while (next < LOOKUPS) await query.get(keys[next++ % keys.length]!);
  };
  const cpu0 = await cpuMs(pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const wallMs = performance.now() - t0;
  const cpu = await cpuMs(pid) - cpu0;
  return { perSecond: LOOKUPS / (wallMs / 1000), cpuUs: (cpu * 1000) / LOOKUPS };
}

async function lookups(pods: number): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-whois-bench-" });
  const socket = `${dir}/pods-api.sock`;
  const child = await startDaemon(pods, socket);
  try {
    using client = new PodsClient({ socket });
    const query = new PodQueryClient(client);
    const found = [];
    for (let pid = FIRST_SIM_PID; found.length < 100 && pid < FIRST_SIM_PID + 4 * pods; pid++) {
      const got = await query.get({ kind: "pid", pid }).catch(() => undefined);
      if (got?.container !== undefined) found.push(got.container);
    }
    const kinds: [string, PodKey[]][] = [
      ["host PID", found.map((c) => ({ kind: "pid", pid: c.initPid }))],
      ["cgroup ID", found.map((c) => ({ kind: "cgroupId", cgroupId: c.cgroupId }))],
      ["cgroup path", found.map((c) => ({ kind: "cgroupPath", path: c.cgroupPath }))],
      ["mount namespace", found.map((c) => ({ kind: "mntns", inode: c.mntnsInode }))],
      ["container ID (before)", found.map((c) => ({ kind: "containerId", id: c.containerId }))],
    ];
    for (const [, keys] of kinds) await measure(query, child.pid, keys.slice(0, 50)); // warm-up
    for (const [name, keys] of kinds) {
      const { perSecond, cpuUs } = await measure(query, child.pid, keys);
      console.log(
        `${pods} pods, Get by ${name}: ${perSecond.toFixed(0)} lookups/s, daemon CPU ${
          cpuUs.toFixed(0)
        } µs per lookup (${keys.length} containers, ${LOOKUPS} lookups, c=${CONCURRENCY})`,
      );
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
}

/** The runtime as the CRI source reads it, with the verbose `info` stripped when `verbose` is off. */
function reader(runtime: SimCriRuntime, verbose: boolean): RuntimeReader {
  if (verbose) return runtime;
  return {
    listPodSandbox: (r) => runtime.listPodSandbox(r),
    listContainers: (r) => runtime.listContainers(r),
    podSandboxStatus: (r) => runtime.podSandboxStatus(r),
    containerStatus: (r) => runtime.containerStatus({ ...r, verbose: false }),
    getContainerEvents: (r, o) => runtime.getContainerEvents(r, o),
  };
}

async function relists(pods: number, report: boolean): Promise<void> {
  const spec = (i: number) => ({
    name: `pod-${i}`,
    uid: `uid-${i}`,
    containers: [{ name: "app", image: "busybox:1" }, { name: "sidecar", image: "envoy:1" }],
  });
  for (const verbose of [false, true]) {
    const runtime = new SimCriRuntime({ runtimeName: "containerd" });
    const sandboxes: string[] = [];
    for (let i = 0; i < pods; i++) {
      sandboxes.push((await runKubeletPod(runtime, spec(i))).sandboxId);
    }
    const source = new CriPodSource({ runtime: reader(runtime, verbose), nodeName: "node-1" });
    const index = new ProcessIndex(source, {
      fs: new SimProcFs(runtime),
      cgroupRoots: [SIM_CGROUP_ROOT],
    });
    await source.list(AbortSignal.timeout(60_000));
    let t = performance.now();
    if (verbose) index.lookup({ kind: "mntns", inode: 1 + 4_026_531_840 + FIRST_SIM_PID });
    const firstBuild = performance.now() - t;
    const listMs: number[] = [];
    const rebuildMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // One pod replaced: what a relist on a busy node reads anew.
      await removeKubeletPod(runtime, sandboxes[round]!);
      await runKubeletPod(runtime, spec(pods + round));
      t = performance.now();
      await source.list(AbortSignal.timeout(60_000));
      listMs.push(performance.now() - t);
      if (!verbose) continue;
      t = performance.now();
      // The rebuild happens at the first lookup after a change.
      index.lookup({ kind: "cgroupPath", path: source.containerProcesses()[0]!.cgroupsPath });
      rebuildMs.push(performance.now() - t);
    }
    if (!report) continue;
    console.log(
      `${pods} pods (${2 * pods} containers), relist with one pod replaced, ${
        verbose ? "with" : "without"
      } process info: median ${median(listMs).toFixed(2)} ms over ${ROUNDS} rounds` +
        (verbose
          ? `; index rebuild at the next lookup: median ${
            median(rebuildMs).toFixed(2)
          } ms; first build ${firstBuild.toFixed(1)} ms`
          : ""),
    );
  }
}

for (const pods of SIZES) await lookups(pods);
// A first pass warms the JIT up for both: only the second is reported.
for (const pods of SIZES) for (const report of [false, true]) await relists(pods, report);
