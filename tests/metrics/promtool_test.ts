import assert from "node:assert/strict";
import { makePod } from "../_fixtures/pods.ts";
import { callUnary, startHarness, watch } from "../_support/daemon_harness.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { parseProcStatus, type ProcReader } from "../../src/metrics/proc_self.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { assertPromtoolAccepts } from "../_support/promtool.ts";

const peer = requirePeer(PEERS.promtool);

Deno.test({
  name: peer.name("/metrics exposes every kubelet Pods API metric and promtool accepts it"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using h = await startHarness();
    h.source.set([makePod({ uid: "u1", name: "a" })]);
    await h.daemon.relistOnce();
    await callUnary(h.v1alpha1, "ListPods", {});
    await callUnary(h.v1, "GetPod", { podUID: "nope" });
    const w = watch(h.v1alpha1);
    await w.waitFor(2);
    w.cancel();
    await w.ended;
    const { status, body } = await h.http("/metrics");
    assert.equal(status, 200);
    for (
      const name of [
        "kubelet_pod_requests_total",
        "kubelet_pod_requests_list_total",
        "kubelet_pod_requests_get_total",
        "kubelet_pod_requests_watch_total",
        "kubelet_pod_watch_events_dropped_total",
        "pods_api_relist_duration_seconds",
        "pods_api_cache_pods",
        "pods_api_source_synced",
      ]
    ) assert.match(body, new RegExp(`^# TYPE ${name} `, "m"), name);
    assert.match(
      body,
      /kubelet_pod_requests_get_total\{server_api_version="v1",status_code="NotFound"\} 1/,
    );
    await assertPromtoolAccepts(body);
  },
});

Deno.test("/healthz answers ok and unknown paths 404", async () => {
  await using h = await startHarness();
  assert.deepEqual(await h.http("/healthz"), { status: 200, body: "ok\n" });
  assert.equal((await h.http("/nope")).status, 404);
});

/** Runs a command and returns its stdout (this process's /proc is read by a child, as Deno reads it only under --allow-all). */
function run(cmd: string, ...args: string[]): string {
  const out = new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).outputSync();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

/** This process's `/proc/<pid>` read through `cat` and `ls`: what the daemon reads under --allow-all. */
const catReader: ProcReader = {
  readText: (path) => run("cat", path.replace("/proc/self/", `/proc/${Deno.pid}/`)),
  countEntries: (path) =>
    run("ls", "-A", path.replace("/proc/self/", `/proc/${Deno.pid}/`)).split("\n")
      .filter((l) => l !== "").length,
};

/** The value of an unlabelled sample, or `undefined` when the metric is not exported. */
function sample(body: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(body);
  return match === null ? undefined : Number(match[1]);
}

/** VmRSS of this process, read by a child. */
function vmRss(): number {
  return parseProcStatus(run("cat", `/proc/${Deno.pid}/status`)).residentBytes;
}

Deno.test({
  name: peer.name(
    "process_* metrics on /metrics carry this process's real figures, and promtool accepts them",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using h = await startHarness({
      registry: createMetricsRegistry({ processMetrics: true, proc: catReader }),
    });
    const { body } = await h.http("/metrics");
    const names = [
      "process_cpu_user_seconds_total",
      "process_cpu_seconds_total",
      "process_start_time_seconds",
      "process_resident_memory_bytes",
      "process_virtual_memory_bytes",
      "process_heap_bytes",
      "process_open_fds",
      "process_max_fds",
    ];
    for (const name of names) {
      const value = sample(body, name);
      assert.ok(value !== undefined && value > 0, `${name} is ${value}`);
    }
    for (const m of body.matchAll(/^(process_\S+) (\S+)$/gm)) {
      assert.notEqual(Number(m[2]), 0, `${m[1]} is exported as 0`);
    }
    // RSS moves between two reads; the same order of magnitude is what a dashboard needs.
    const rss = sample(body, "process_resident_memory_bytes")!;
    const ratio = rss / vmRss();
    assert.ok(ratio > 0.5 && ratio < 2, `RSS ${rss} vs VmRSS ${vmRss()}`);
    assert.ok(sample(body, "process_virtual_memory_bytes")! >= rss);
    assert.ok(sample(body, "process_open_fds")! <= sample(body, "process_max_fds")!);
    const start = sample(body, "process_start_time_seconds")!;
    assert.ok(start <= Date.now() / 1000 && start > Date.now() / 1000 - 86_400 * 365);
    await assertPromtoolAccepts(body);
  },
});

Deno.test("without /proc/self the figures only it has are left out, not exported as 0", async () => {
  // Deno refuses /proc/self without --allow-all, as it does the daemon: a reader that is refused.
  const refused: ProcReader = {
    readText: (path) => {
      throw new Deno.errors.NotCapable(`Requires all access to "${path}"`);
    },
    countEntries: (path) => {
      throw new Deno.errors.NotCapable(`Requires all access to "${path}"`);
    },
  };
  const { expose } = createMetricsRegistry({ processMetrics: true, proc: refused });
  const body = await expose();
  for (const name of ["process_virtual_memory_bytes", "process_heap_bytes", "process_open_fds"]) {
    assert.doesNotMatch(body, new RegExp(`^(# TYPE )?${name}\\b`, "m"), name);
  }
  const rss = sample(body, "process_resident_memory_bytes");
  assert.ok(rss !== undefined && rss > 0, `RSS is ${rss}`);
  const ratio = rss / vmRss();
  assert.ok(ratio > 0.5 && ratio < 2, `RSS ${rss} vs VmRSS ${vmRss()}`);
  for (const m of body.matchAll(/^(process_\S+) (\S+)$/gm)) {
    assert.notEqual(Number(m[2]), 0, `${m[1]} is exported as 0`);
  }
});
