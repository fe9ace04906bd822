// Any client compiled from the published protos must get the same answers:
// here Python grpcio with Debian protoc's descriptors, talking to the real
// daemon over its socket.
import assert from "node:assert/strict";
import { SimulatedNode } from "../../src/sim/mod.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const PYTHON = "/usr/bin/python3";
const PROTO_FILES = [
  "pods_api.proto",
  "pods_api_v1.proto",
  "k8s.io/api/core/v1/generated.proto",
  "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
  "k8s.io/apimachinery/pkg/api/resource/generated.proto",
  "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
];

const peer = requirePeer(PEERS.protoc, PEERS.grpcio, PEERS.pythonProtobuf);

Deno.test({
  name: peer.name(
    "a Python grpcio client built from the protos decodes every pod and gets the same answers",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using h = await startHarness();
    const fixture = JSON.parse(
      await Deno.readTextFile(new URL("../_fixtures/full_pod.json", import.meta.url)),
    ) as PodObject;
    const node = new SimulatedNode({ clock: h.clock, pods: 60, seed: 7, nodeName: "test-node" });
    h.clock.advance(120_000);
    node.advanceTo(h.clock.now());
    h.source.set([fixture, ...node.pods()]);
    assert.equal(await h.daemon.relistOnce(), true);
    const expected = h.daemon.cache.list().map((p) => p.uid);

    const descriptors = `${h.dir}/pods.pb`;
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
    const run = await new Deno.Command(PYTHON, {
      args: [new URL("./_grpcio_client.py", import.meta.url).pathname, descriptors, h.socket],
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assert.ok(run.success, stderr);
    const report = JSON.parse(new TextDecoder().decode(run.stdout));
    assert.deepEqual(report.v1alpha1_uids, expected);
    assert.deepEqual(report.v1_uids, expected);
    assert.ok(report.containers >= expected.length);
    assert.ok(report.phases.includes("Running"));
    assert.equal(report.get_name, h.daemon.cache.get(expected[0]!)!.pod.metadata.name);
    assert.equal(report.get_v1_name, report.get_name);
    assert.deepEqual(report.masked_fields, ["metadata", "status"]);
    assert.deepEqual(report.masked_status_fields, ["phase"]);
    assert.equal(report.not_found, "NOT_FOUND");
    assert.match(report.not_found_details, /not found/);
    assert.deepEqual(report.watch_types, [...expected.map(() => 1), 4]);
  },
});
