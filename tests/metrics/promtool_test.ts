import assert from "node:assert/strict";
import { makePod } from "../_fixtures/pods.ts";
import { callUnary, startHarness, watch } from "../_support/daemon_harness.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const PROMTOOL = "/usr/bin/promtool";
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
    const check = new Deno.Command(PROMTOOL, {
      args: ["check", "metrics"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = check.stdin.getWriter();
    await writer.write(new TextEncoder().encode(body));
    await writer.close();
    const result = await check.output();
    const out = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, out);
    assert.equal(out.trim(), "", `promtool has complaints:\n${out}`);
  },
});

Deno.test("/healthz answers ok and unknown paths 404", async () => {
  await using h = await startHarness();
  assert.deepEqual(await h.http("/healthz"), { status: 200, body: "ok\n" });
  assert.equal((await h.http("/nope")).status, 404);
});
