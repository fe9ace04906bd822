// The CLI on a socket that serves only the kubelet's v1alpha1.Pods (no PodQuery), and tombstones
// on one that does: lookups and selectors fall back to a list, --deleted says what it needs.
import assert from "node:assert/strict";
import { PodQueryClient, PodsClient } from "../../src/client/mod.ts";
import { startKubeletLikeServer } from "../_support/kubelet_like_server.ts";
import { lines } from "./_cli_output.ts";
import { runCli, startSimDaemon } from "./_sim_daemon.ts";

Deno.test("pods-api get and list work on a kubelet's socket by listing; --deleted says it needs PodQuery", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  await using kubelet = startKubeletLikeServer(`${daemon.dir}/kubelet.sock`, daemon.socket);
  const s = ["--socket", kubelet.path];
  const cases: Array<[string[], string]> = [
    [["get", "--ip", "10.244.44.5", "-o", "name"], "pod/ledger-worker-r949nspsh-cr9th"],
    [["get", "--container-id", "193f22ca1da6", "-o", "name"], "pod/ledger-worker-r949nspsh-cr9th"],
    [
      ["get", "payments/ledger-worker-r949nspsh-cr9th", "-o", "name"],
      "pod/ledger-worker-r949nspsh-cr9th",
    ],
    [
      ["list", "-n", "payments", "-l", "app.kubernetes.io/name=checkout-api", "-o", "name"],
      "pod/checkout-api-pqfh67fcg6-2pbhk",
    ],
  ];
  for (const [args, want] of cases) {
    const r = await runCli([...args, ...s]);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    assert.equal(r.stdout, want + "\n");
  }
  const deleted = await runCli(["get", "payments/gone", "--deleted", ...s]);
  assert.equal(deleted.code, 1);
  assert.deepEqual(lines(deleted.stderr), [
    "pods-api get: The server does not offer this call (--deleted needs a pods-api daemon; this socket serves only the kubelet's Pods API (no podsapi.v1.PodQuery), which keeps no deleted pods): is --socket a pods-api or kubelet Pods API socket?",
  ]);
  const missing = await runCli(["get", "--ip", "10.9.9.9", ...s]);
  assert.deepEqual(lines(missing.stderr), [
    'pods-api get: Not found: pod with IP "10.9.9.9" not found',
  ]);
});

Deno.test("pods-api get --deleted shows a deleted pod's last state and says it was deleted", async () => {
  await using daemon = await startSimDaemon({ pods: 20, churn: 40, seed: 9 });
  using client = new PodsClient({ socket: daemon.socket });
  const stop = new AbortController();
  let gone: { uid: string; ns: string; name: string } | undefined;
  for await (const event of new PodQueryClient(client).watch({ signal: stop.signal })) {
    if (event.type !== "DELETED" || event.pod === undefined) continue;
    const m = event.pod.metadata;
    gone = { uid: m.uid, ns: m.namespace, name: m.name };
    stop.abort();
  }
  assert.ok(gone);
  const plain = await runCli(["get", gone.uid, "--socket", daemon.socket]);
  assert.equal(plain.code, 1);
  assert.match(lines(plain.stderr)[0]!, /^pods-api get: Not found: /);
  const r = await runCli([
    "get",
    gone.uid,
    "--deleted",
    "-o",
    "jsonpath={.metadata.name}",
    "--socket",
    daemon.socket,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), gone.name);
  assert.match(
    r.stderr,
    new RegExp(
      `^pods-api get: pod ${gone.ns}/${gone.name} was deleted at \\S+; this is its last state\\n$`,
    ),
  );
});
