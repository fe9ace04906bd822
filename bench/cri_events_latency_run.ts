/**
 * Runtime change to watcher on a real containerd (issue 37): the daemon at
 * its default flags reading a private containerd (Debian 13's 1.7.24 by
 * default, fetched and unpacked by `scripts/real_cri/fetch_containerd17.sh`;
 * `1.6` for Debian 12's), the bench playing the kubelet one pod at a time.
 * One pod's lifecycle after another, 250-750 ms apart (seven changes in
 * about 400 ms, then a pause: a busy node's pace, not a storm). Times each change
 * from the CRI call that made it returning to the watch event that shows it
 * (0 when the event came first):
 *
 * - container start: StartContainer → MODIFIED with the container running;
 * - container exit: StopContainer → MODIFIED with it terminated;
 * - pod removal: StopPodSandbox, RemoveContainer, RemovePodSandbox →
 *   DELETED, from RemovePodSandbox.
 *
 * Run (root): deno task bench:cri-latency [PODS] [1.7|1.6] [EXTRA SERVE FLAGS...]
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { PodsClient } from "../src/client/mod.ts";
import { systemClock } from "../src/clock.ts";
import { parseServeConfig } from "../src/config.ts";
import { startDaemon } from "../src/daemon.ts";
import { silentLogger } from "../src/log.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import {
  kubeletContainerConfig,
  type KubeletPodSpec,
  kubeletSandboxConfig,
} from "../src/sim/runtime/cri_kubelet.ts";
import { CriClient, CriPodSource } from "../src/sources/cri/mod.ts";
import { percentile } from "./_live_latency.ts";

const PODS = Number(Deno.args[0] ?? 40);
const RUNTIME = Deno.args[1] ?? "1.7";
/** Flags beyond the defaults, to see what one changes (none for the figures of record). */
const EXTRA_FLAGS = Deno.args.slice(2);
const BUSYBOX = "localhost/real-cri/busybox:1";
/**
 * Pause between two pods' lifecycles, ms: random, so that removals fall at
 * random moments of the 1 s relist period (a fixed pause near one period
 * less a lifecycle puts every removal just after the periodic relist, inside
 * the spacing of the relist it wakes).
 */
function podSpacingMs(): number {
  return 250 + Math.random() * 500;
}
const SCRIPTS = new URL("../scripts/real_cri/", import.meta.url).pathname;

async function sh(args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command("bash", { args, env, stderr: "inherit" }).output();
  if (!out.success) throw new Error(`bash ${args.join(" ")} failed`);
  return new TextDecoder().decode(out.stdout).trim();
}

/** Every watch event, with when it arrived. */
const seen: Seen[] = [];

interface Seen {
  readonly type: string;
  readonly uid: string;
  readonly app: string | undefined;
  readonly at: number;
}

/** Makes a change; resolves with ms from its call's return to the first event after `from` that shows it. */
async function timed(
  uid: string,
  call: () => Promise<unknown>,
  shows: (s: Seen) => boolean,
): Promise<number> {
  const from = seen.length;
  await call();
  const returned = performance.now();
  const deadline = returned + 30_000;
  for (;;) {
    const hit = seen.slice(from).find((s) => s.uid === uid && shows(s));
    if (hit !== undefined) return Math.max(0, hit.at - returned);
    if (performance.now() > deadline) throw new Error(`no event for ${uid} in 30 s`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

const dir = await Deno.makeTempDir({ prefix: "cri-latency-" });
const sock = `${dir}/run/containerd.sock`;
const state = `${dir}/state`;
await Deno.mkdir(`${dir}/run`);
let path = Deno.env.get("PATH") ?? "";
if (RUNTIME === "1.7") {
  const usr = await sh([
    `${SCRIPTS}/fetch_containerd17.sh`,
    Deno.env.get("PODS_API_CONTAINERD17_DIR") ?? "/var/cache/pods-api/containerd-trixie",
  ]);
  path = `${usr}/bin:${path}`;
}
await sh([`${SCRIPTS}/up.sh`, sock, state], { PATH: path });
const kubelet = new CriClient(sock, { requestTimeoutMs: 120_000 });
const runtime = new CriClient(sock);
const version = await kubelet.version();
const config = parseServeConfig([
  "--socket",
  `${dir}/pods-api.sock`,
  "--kubelet-compat-socket=",
  "--kubelet-pods-api-endpoint",
  "none",
  "--metrics-bind-address",
  "127.0.0.1:0",
  "--hostname-override",
  "bench-node",
  ...EXTRA_FLAGS,
]);
const registry = createMetricsRegistry();
const daemon = await startDaemon(config, {
  log: silentLogger,
  clock: systemClock,
  sources: [new CriPodSource({ runtime, nodeName: "bench-node", metrics: registry.metrics })],
  registry,
  runLoops: true,
});
const stop = new AbortController();
const watcher = new PodsClient({ socket: `${dir}/pods-api.sock` });
try {
  await daemon.gate.waitOpen(AbortSignal.timeout(60_000));
  const watching = (async () => {
    for await (const event of watcher.watchPods({ signal: stop.signal })) {
      const status = event.pod?.status as
        | { containerStatuses?: { name: string; state: Record<string, unknown> }[] }
        | undefined;
      const app = status?.containerStatuses?.find((c) => c.name === "app");
      seen.push({
        type: event.type,
        uid: String(event.pod?.metadata?.uid ?? ""),
        app: app === undefined ? undefined : Object.keys(app.state)[0],
        at: performance.now(),
      });
    }
  })().catch((e) => {
    if (!stop.signal.aborted) console.error("watch ended", e);
  });

  const start: number[] = [];
  const exit: number[] = [];
  const removal: number[] = [];
  for (let i = 0; i < PODS; i++) {
    // About one pod's lifecycle a second: a busy node's pace, not a storm.
    if (i > 0) await new Promise((r) => setTimeout(r, podSpacingMs()));
    const uid = `bench-${crypto.randomUUID()}`;
    const pod: KubeletPodSpec = {
      name: `bench-${i}`,
      namespace: "bench",
      uid,
      terminationGracePeriodSeconds: 1,
    };
    const app = { name: "app", image: BUSYBOX, command: ["sleep", "3600"] };
    const { podSandboxId } = await kubelet.runPodSandbox({ config: kubeletSandboxConfig(pod) });
    const { containerId } = await kubelet.createContainer({
      podSandboxId,
      config: kubeletContainerConfig(pod, app, 0),
      sandboxConfig: kubeletSandboxConfig(pod),
    });
    // Spaced from the last change as a node's changes are: one relist-free moment apart.
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    start.push(
      await timed(uid, () => kubelet.startContainer({ containerId }), (s) => s.app === "running"),
    );
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
    exit.push(
      await timed(
        uid,
        () => kubelet.stopContainer({ containerId, timeout: 0 }),
        (s) => s.app === "terminated",
      ),
    );
    await kubelet.stopPodSandbox({ podSandboxId });
    await kubelet.removeContainer({ containerId });
    removal.push(
      await timed(
        uid,
        () => kubelet.removePodSandbox({ podSandboxId }),
        (s) => s.type === "DELETED",
      ),
    );
  }
  stop.abort();
  await watching;
  const row = (what: string, ms: number[]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    const f = (p: number) => percentile(sorted, p).toFixed(1);
    return `| ${what} | ${f(50)} | ${f(90)} | ${sorted.at(-1)!.toFixed(1)} |`;
  };
  console.log(
    `\n${version.runtimeName} ${version.runtimeVersion}, ${PODS} pods, ` +
      `${EXTRA_FLAGS.length === 0 ? "default flags" : EXTRA_FLAGS.join(" ")}\n`,
  );
  console.log("| change | p50 ms | p90 ms | max ms |\n| --- | --- | --- | --- |");
  console.log(row("container start", start));
  console.log(row("container exit", exit));
  console.log(row("pod removal", removal));
  const events = (await registry.metrics.runtimeEvents.get()).values
    .map((v) => `${v.labels.outcome} ${v.value}`).join(", ");
  const text = await registry.expose();
  const sum = (name: string) =>
    text.split("\n").filter((l) => l.startsWith(`${name}{source="cri"}`))
      .reduce((t, l) => t + Number(l.split(" ").at(-1)), 0);
  const relists = sum("pods_api_relist_duration_seconds_count");
  const relistMs = (sum("pods_api_relist_duration_seconds_sum") * 1000) / relists;
  console.log(`\nruntime events: ${events}; ${relists} relists, ${relistMs.toFixed(1)} ms each`);
  if (Deno.env.get("PODS_API_BENCH_SAMPLES") === "1") {
    console.log(`start samples: ${start.map((x) => x.toFixed(1)).join(" ")}`);
  }
} finally {
  stop.abort();
  watcher.close();
  await daemon.close();
  kubelet.close();
  runtime.close();
  await sh([`${SCRIPTS}/down.sh`, sock, state, "--purge"], { PATH: path }).catch(() => {});
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
