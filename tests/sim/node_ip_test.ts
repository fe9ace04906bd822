// The simulated node takes --node-ip as a real node does: every pod's
// status.hostIP, and the pod IP of host-network pods.
import assert from "node:assert/strict";
import { PodsClient } from "../../src/client/mod.ts";
import { startSimDaemon } from "../client/_sim_daemon.ts";

Deno.test("serve --simulate --node-ip gives host-network pods and every hostIP that address", async () => {
  await using daemon = await startSimDaemon({
    pods: 30,
    seed: 1,
    flags: ["--node-ip", "192.168.50.7"],
  });
  using client = new PodsClient({ socket: daemon.socket });
  const pods = await client.listPods();
  const hostNetwork = pods.filter((p) => p.spec?.hostNetwork === true);
  assert.ok(hostNetwork.length > 0, "the simulated node runs host-network pods");
  for (const pod of hostNetwork) {
    assert.equal(pod.status?.podIP, "192.168.50.7", pod.metadata.name);
  }
  for (const pod of pods) {
    if (pod.status?.hostIP === undefined) continue;
    assert.equal(pod.status.hostIP, "192.168.50.7", pod.metadata.name);
    assert.deepEqual(pod.status.hostIPs, [{ ip: "192.168.50.7" }], pod.metadata.name);
  }
  assert.ok(!JSON.stringify(pods).includes("10.0.0.10"), "no made-up node address left");
});
