// A new pod is announced once with what the node knows of it: on the
// simulated node (a CRI runtime plus the node's spec source, as a real node's
// runtime plus the kubelet's /pods) no pod is ADDED with runtime data alone
// and then MODIFIED only to fill its spec in. (A pod that lives and dies
// between two reads of the spec source is announced without one: the
// runtime is all that ever saw it.)
import assert from "node:assert/strict";
import { PodsClient } from "../../src/client/mod.ts";
import { startSimDaemon } from "../client/_sim_daemon.ts";

Deno.test("on a churning simulated node no new pod gets its spec only in a MODIFIED", async () => {
  await using daemon = await startSimDaemon({ pods: 20, churn: 30, seed: 3 });
  using client = new PodsClient({ socket: daemon.socket });
  const stop = new AbortController();
  let synced = false;
  let added = 0;
  let live = 0;
  const bare = new Set<string>();
  const filledLater: string[] = [];
  for await (const event of client.watchPods({ signal: stop.signal })) {
    if (event.type === "INITIAL_SYNC_COMPLETE") synced = true;
    if (!synced || event.pod === undefined) continue;
    const pod = event.pod;
    const hasSpec = (pod.spec as { restartPolicy?: string }).restartPolicy !== undefined;
    if (event.type === "ADDED") {
      added++;
      if (!hasSpec) bare.add(pod.metadata.uid);
    } else if (event.type === "MODIFIED" && hasSpec && bare.has(pod.metadata.uid)) {
      filledLater.push(pod.metadata.name);
    }
    if (++live >= 250) stop.abort();
  }
  assert.ok(added >= 10, `enough new pods seen: ${added}`);
  assert.deepEqual(filledLater, [], "ADDED without the spec, then MODIFIED with it");
});
