// A Python grpcio client compiled by Debian's protoc from proto/ uses
// podsapi.v1.PodQuery: lookups, selectors, masks, resume, bookmarks,
// tombstones, per-connection fairness and OUT_OF_RANGE.
import assert from "node:assert/strict";
import type { PodObject } from "../../src/model/pod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { makePod } from "../_fixtures/pods.ts";
import { startSteppedScript } from "./_stepped_script.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const PYTHON = "/usr/bin/python3";
const PROTO_FILES = ["podsapi/v1/pod_query.proto", "k8s.io/api/core/v1/generated.proto"];
const CONTAINER = "0a1b2c3d4e5f" + "9".repeat(52);

const peer = requirePeer(PEERS.protoc, PEERS.grpcio, PEERS.pythonProtobuf);

function nodePods(): PodObject[] {
  const web = makePod({ uid: "u-web", name: "web-1", namespace: "shop", labels: { app: "web" } });
  web.status = {
    ...web.status,
    podIP: "fd00::b",
    podIPs: [{ ip: "fd00::b" }, { ip: "10.1.0.11" }],
    containerStatuses: [{
      name: "app",
      image: "nginx",
      imageID: "",
      ready: true,
      restartCount: 0,
      containerID: `containerd://${CONTAINER}`,
    }],
  };
  const host = makePod({
    uid: "u-proxy",
    name: "proxy",
    namespace: "kube-system",
    podIP: "10.0.0.10",
  });
  host.spec = { ...host.spec, hostNetwork: true };
  return [
    web,
    makePod({
      uid: "u-api",
      name: "api-7",
      namespace: "shop",
      labels: { app: "api" },
      phase: "Pending",
    }),
    makePod({ uid: "u-db", name: "db-0", namespace: "shop", labels: { app: "db" } }),
    host,
  ];
}

Deno.test({
  name: peer.name(
    "a Python grpcio PodQuery client built by protoc looks up, selects, resumes and is treated fairly",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using h = await startHarness({
      flags: [
        "--watch-history",
        "5m,6",
        "--connection-rate-limit-burst",
        "15",
        "--rate-limit-burst",
        "40",
      ],
    });
    const set = async (pods: PodObject[]) => {
      h.source.set(pods);
      assert.equal(await h.daemon.relistOnce(), true);
    };
    let pods = nodePods();
    await set(pods);
    const descriptors = `${h.dir}/query.pb`;
    const protoc = await new Deno.Command("/usr/bin/protoc", {
      args: [
        "-I",
        "proto",
        "--include_imports",
        `--descriptor_set_out=${descriptors}`,
        ...PROTO_FILES,
      ],
      cwd: new URL("../..", import.meta.url),
    }).output();
    assert.ok(protoc.success, new TextDecoder().decode(protoc.stderr));
    await using script = startSteppedScript(PYTHON, [
      new URL("./_pod_query_grpcio.py", import.meta.url).pathname,
      descriptors,
      h.socket,
      CONTAINER,
    ]);
    const { step, go } = script;
    const q = await step("query");
    assert.deepEqual(q.all, ["api-7", "db-0", "proxy", "web-1"]);
    assert.deepEqual(q.labelled, ["api-7", "web-1"]);
    assert.deepEqual(q.fields, ["api-7"]);
    assert.deepEqual(q.masked_status, ["phase"]);
    assert.equal(q.masked_has_spec, false);
    assert.equal(q.by_name, "api-7");
    assert.equal(q.by_container, "web-1");
    assert.equal(q.by_prefix, "web-1");
    assert.equal(q.by_ip, "web-1");
    assert.equal(q.host_ip[0], "NOT_FOUND", "a host-network pod is not found by the node's IP");
    assert.equal(q.short_prefix[0], "INVALID_ARGUMENT");
    assert.deepEqual(q.bad_selector[0], "INVALID_ARGUMENT");
    assert.match(q.bad_selector[1], /label selector/);
    assert.deepEqual(q.bad_field[0], "INVALID_ARGUMENT");
    assert.match(q.bad_field[1], /"spec\.priority"/);
    assert.deepEqual(q.missing, ["NOT_FOUND", 'pod with UID "no-such-uid" not found']);
    assert.deepEqual(q.initial, [1, 1, 1, 4]);

    pods = pods.map((p) =>
      p.metadata.name === "api-7" ? { ...p, status: { phase: "Running" } } : p
    );
    await set(pods);
    pods = pods.filter((p) => p.metadata.name !== "web-1");
    await set(pods);
    await go();
    // The resumed watch asks for a bookmark every second of the daemon's
    // clock: once it has armed that timer, the second passes.
    await h.clock.waitForTimers(1, 1000);
    h.clock.advance(1000);
    const resumed = await step("resumed");
    assert.deepEqual(resumed.events, [[2, "api-7"], [3, "web-1"], [5, true]]);
    assert.equal(resumed.gone[0], "NOT_FOUND");
    assert.deepEqual(resumed.tombstone, ["web-1", true, true]);

    const fair = await step("fair");
    assert.deepEqual(fair.noisy, [
      ...Array(15).fill("OK"),
      ...Array(5).fill("RESOURCE_EXHAUSTED"),
    ]);
    assert.equal(fair.quiet, "OK", "a noisy connection does not starve a quiet one");

    for (let i = 0; i < 6; i++) {
      await set(
        pods.map((p) => ({ ...p, metadata: { ...p.metadata, labels: { gen: String(i) } } })),
      );
    }
    await go();
    const expired = await step("expired");
    assert.deepEqual(expired.result, ["OUT_OF_RANGE", "resume token too old; list again"]);
  },
});
