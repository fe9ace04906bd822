// PodsClient and PodQueryClient: every RPC of both kubelet-shaped services and of PodQuery, on one
// connection, against the daemon in its own process.
import assert from "node:assert/strict";
import {
  GrpcError,
  PodQueryClient,
  PodsClient,
  type QueryWatchEvent,
  STATUS,
} from "../../src/client/mod.ts";
import { startSimDaemon } from "./_sim_daemon.ts";

Deno.test("PodsClient calls both Pods services and PodQuery on one connection", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  using client = new PodsClient({ socket: daemon.socket });
  const v1alpha1 = await client.listPods();
  const v1 = await client.listPods({ service: "Pods" });
  assert.equal(v1alpha1.length, 12);
  assert.deepEqual(v1, v1alpha1);
  const uid = v1alpha1[0]!.metadata.uid;
  assert.deepEqual(await client.getPod(uid, { service: "Pods" }), await client.getPod(uid));
  await assert.rejects(client.getPod("nope"), (e: unknown) => {
    assert.ok(e instanceof GrpcError);
    assert.equal(e.code, STATUS.NOT_FOUND);
    return true;
  });
  const masked = await client.listPods({ fields: ["status.phase"] });
  assert.deepEqual(Object.keys(masked[0]!.status!), ["phase"]);

  const stop = new AbortController();
  const watched: string[] = [];
  for await (const event of client.watchPods({ signal: stop.signal })) {
    watched.push(event.type);
    if (event.type === "INITIAL_SYNC_COMPLETE") stop.abort();
  }
  assert.deepEqual(watched, [...Array(12).fill("ADDED"), "INITIAL_SYNC_COMPLETE"]);
  const stopV1 = new AbortController();
  const pods: string[] = [];
  for await (const pod of client.watchPodsV1({ signal: stopV1.signal })) {
    pods.push(pod.metadata.uid);
    if (pods.length === 12) stopV1.abort();
  }
  assert.deepEqual(new Set(pods), new Set(v1alpha1.map((p) => p.metadata.uid)));

  const query = new PodQueryClient(client);
  const listed = await query.list({ namespace: "payments" });
  assert.deepEqual(listed.pods.map((p) => p.metadata.name).sort(), [
    "checkout-api-pqfh67fcg6-2pbhk",
    "ledger-worker-r949nspsh-cr9th",
    "ledger-worker-r949nspsh-gc6w5",
  ]);
  assert.notEqual(listed.resumeToken, "");
  const byIp = await query.get({ kind: "podIp", ip: "10.244.44.5" });
  assert.equal(byIp.pod.metadata.name, "ledger-worker-r949nspsh-cr9th");
  assert.equal(byIp.deleted, false);
  const stopQ = new AbortController();
  const events: QueryWatchEvent[] = [];
  for await (
    const event of query.watch({ signal: stopQ.signal, selector: { namespace: "payments" } })
  ) {
    events.push(event);
    if (event.type === "INITIAL_SYNC_COMPLETE") stopQ.abort();
  }
  assert.deepEqual(events.map((e) => e.type), ["ADDED", "ADDED", "ADDED", "INITIAL_SYNC_COMPLETE"]);
  assert.notEqual(events.at(-1)!.resumeToken, "");
});
