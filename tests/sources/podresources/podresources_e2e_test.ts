// The daemon against a fake kubelet podresources server in another process
// (Python grpcio, messages from protoc's descriptors of our .proto): what
// agents get on the daemon's socket as allocations appear, move and go, a
// pod re-created under its name, the kubelet refusing calls, and no server.
import assert from "node:assert/strict";
import { PodQueryClient, PodsClient } from "../../../src/client/mod.ts";
import { runClientCommand } from "../../../src/client/cli.ts";
import type { QueryWatchEvent } from "../../../src/client/mod.ts";
import type { PodObject } from "../../../src/model/pod.ts";
import { type Harness, startHarness } from "../../_support/daemon_harness.ts";
import { metricValue } from "../../_support/metric_value.ts";
import { makePod } from "../../_fixtures/pods.ts";
import { containerResources, gpuPod, podResources } from "../../_fixtures/pod_resources.ts";
import {
  FAKE_PODRESOURCES_PEER as peer,
  type FakePodResources,
  startFakePodResources,
} from "./_fake_podresources.ts";

const EMPTY = new Uint8Array(0);

async function setUp(extraFlags: string[] = []) {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-podresources-" });
  const fake = await startFakePodResources(dir);
  const h = await startHarness({
    // The harness's clock stands still: buckets large enough for the whole test.
    flags: [
      "--pod-resources-endpoint",
      fake.endpoint,
      "--connection-rate-limit-burst",
      "100",
      "--rate-limit-burst",
      "100",
      ...extraFlags,
    ],
  });
  const client = new PodsClient({ socket: h.socket });
  return { dir, fake, h, client, query: new PodQueryClient(client) };
}

async function tearDown(
  s: { dir: string; fake: FakePodResources; h: Harness; client: PodsClient },
) {
  s.client.close();
  await s.h[Symbol.asyncDispose]();
  await s.fake[Symbol.asyncDispose]();
  await Deno.remove(s.dir, { recursive: true });
}

async function setPods(h: Harness, pods: PodObject[]) {
  h.source.set(pods);
  assert.equal(await h.daemon.relistOnce(), true);
}

function gpusOf(
  resources:
    | { containers: readonly { devices: readonly { deviceIds: readonly string[] }[] }[] }
    | undefined,
) {
  return resources?.containers.flatMap((c) => c.devices.flatMap((d) => d.deviceIds)) ?? [];
}

Deno.test({
  name: peer.name(
    "podresources: allocations appear, move and disappear for agents on the daemon's socket",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const s = await setUp();
    const { fake, h, client, query } = s;
    try {
      const trainer = makePod({
        uid: "u-trainer",
        name: "trainer-0",
        namespace: "ml",
        containers: ["main"],
      });
      const infer = makePod({
        uid: "u-infer",
        name: "infer",
        namespace: "ml",
        containers: ["main"],
      });
      const web = makePod({ uid: "u-web", name: "web", namespace: "shop" });
      await setPods(h, [trainer, infer, web]);
      const podsBefore = await client.unary("/v1alpha1.Pods/ListPods", EMPTY);

      // Watchers: one that asked for resources, one that did not.
      const stop = new AbortController();
      const asking = query.watch({ includeResources: true, signal: stop.signal })
        [Symbol.asyncIterator]();
      const plain = query.watch({ signal: stop.signal })[Symbol.asyncIterator]();
      const next = async (it: AsyncIterator<QueryWatchEvent>) =>
        (await it.next()).value as QueryWatchEvent;
      for (const it of [asking, plain]) {
        for (let i = 0; i < 4; i++) await next(it); // 3 ADDED, INITIAL_SYNC_COMPLETE
      }

      // Appear.
      await fake.setList([
        podResources("ml", "trainer-0", [
          containerResources("main", {
            devices: [["nvidia.com/gpu", ["GPU-8f2c", "GPU-11aa"], [0]]],
            cpuIds: [2, 3, 66],
            memory: [["hugepages-1Gi", 2 ** 31, [0]]],
          }),
        ]),
        podResources("shop", "web", [containerResources("app")]), // holds nothing
      ]);
      await fake.setAllocatable({
        devices: [
          { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-8f2c", "GPU-11aa"], numaNodes: [0] },
          { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-77ee"], numaNodes: [1] },
        ],
        cpuIds: [0, 1, 2, 3, 64, 65, 66, 67],
        memory: [],
      });
      assert.equal((await h.daemon.pollPodResources())?.outcome, "ok");
      const event = await next(asking);
      assert.equal(event.type, "MODIFIED");
      assert.equal(event.pod?.metadata.uid, "u-trainer");
      assert.deepEqual(gpusOf(event.resources), ["GPU-11aa", "GPU-8f2c"]);

      const listed = await query.list({ namespace: "ml" }, { includeResources: true });
      assert.deepEqual(listed.resources.map((r) => r.uid), ["u-trainer"]);
      assert.deepEqual(listed.resources[0]!.containers[0]!.cpuIds, [2, 3, 66]);
      assert.deepEqual(listed.resources[0]!.containers[0]!.memory, [
        { memoryType: "hugepages-1Gi", size: 2 ** 31, numaNodes: [0] },
      ]);
      const gpuPods = await query.list({ resourceName: "nvidia.com/gpu" });
      assert.deepEqual(gpuPods.pods.map((p) => p.metadata.name), ["trainer-0"]);
      const holder = await query.get({ kind: "deviceId", id: "GPU-8f2c" });
      assert.deepEqual([holder.pod.metadata.name, holder.deviceContainers], ["trainer-0", [
        "main",
      ]]);

      const devices = await query.listDevices("nvidia.com/gpu");
      assert.equal(devices.available, true);
      assert.deepEqual(
        devices.devices.map((d) => [d.deviceId, d.holders.map((x) => `${x.name}/${x.containers}`)]),
        [["GPU-11aa", ["trainer-0/main"]], ["GPU-77ee", []], ["GPU-8f2c", ["trainer-0/main"]]],
      );
      const cpus = await query.listDevices("cpu");
      assert.deepEqual(cpus.freeCpuIds, [0, 1, 64, 65, 67]);
      assert.equal(
        await metricValue(h.daemon.registry.metrics.devices, {
          resource: "nvidia.com/gpu",
          state: "free",
        }),
        1,
      );
      assert.equal(
        await metricValue(h.daemon.registry.metrics.devices, {
          resource: "nvidia.com/gpu",
          state: "allocated",
        }),
        2,
      );

      // The Pods API's bytes are the kubelet's: no allocation in them.
      assert.deepEqual(await client.unary("/v1alpha1.Pods/ListPods", EMPTY), podsBefore);

      // Move: the devices go to another pod.
      await fake.setList([
        podResources("ml", "infer", [
          containerResources("main", { devices: [["nvidia.com/gpu", ["GPU-8f2c"], [0]]] }),
        ]),
      ]);
      assert.equal((await h.daemon.pollPodResources())?.outcome, "ok");
      const moved = [await next(asking), await next(asking)];
      assert.deepEqual(moved.map((e) => [e.type, e.pod?.metadata.name, gpusOf(e.resources)]), [
        ["MODIFIED", "infer", ["GPU-8f2c"]],
        ["MODIFIED", "trainer-0", []],
      ]);
      assert.equal(
        (await query.get({ kind: "deviceId", id: "GPU-8f2c" })).pod.metadata.name,
        "infer",
      );

      // Disappear.
      await fake.setList([]);
      assert.equal((await h.daemon.pollPodResources())?.outcome, "ok");
      const gone = await next(asking);
      assert.deepEqual([gone.type, gone.pod?.metadata.name, gone.resources], [
        "MODIFIED",
        "infer",
        undefined,
      ]);

      // The plain watcher saw none of it: its next event is a pod change.
      await setPods(h, [
        trainer,
        infer,
        makePod({ uid: "u-web", name: "web", namespace: "shop", phase: "Failed" }),
      ]);
      const change = await next(plain);
      assert.deepEqual([change.type, change.pod?.metadata.name], ["MODIFIED", "web"]);
      stop.abort();
    } finally {
      await tearDown(s);
    }
  },
});

Deno.test({
  name: peer.name(
    "podresources: a pod deleted and re-created under its name gets its new devices, not the old pod's",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const s = await setUp();
    const { fake, h, query } = s;
    try {
      const first = makePod({
        uid: "job-1",
        name: "job",
        namespace: "ml",
        creationTimestamp: "2026-01-01T00:00:00Z",
      });
      await setPods(h, [first]);
      await fake.setList([gpuPod("ml", "job", ["GPU-A"])]);
      await h.daemon.pollPodResources();
      assert.equal((await query.get({ kind: "deviceId", id: "GPU-A" })).pod.metadata.uid, "job-1");

      // The kubelet already runs the new pod; the daemon has not seen it yet.
      await fake.setList([gpuPod("ml", "job", ["GPU-B"])]);
      await h.daemon.pollPodResources();
      await assert.rejects(query.get({ kind: "deviceId", id: "GPU-B" }), /not found/);
      await assert.rejects(query.get({ kind: "deviceId", id: "GPU-A" }), /not found/);

      // Now the daemon sees the old one deleted and the new one under the same name.
      const second = makePod({
        uid: "job-2",
        name: "job",
        namespace: "ml",
        creationTimestamp: "2026-01-01T00:01:00Z",
      });
      await setPods(h, [second]);
      await h.daemon.pollPodResources();
      const found = await query.get({ kind: "deviceId", id: "GPU-B" });
      assert.equal(found.pod.metadata.uid, "job-2");
      const byName = await query.get({ kind: "name", namespace: "ml", name: "job" }, {
        includeResources: true,
      });
      assert.deepEqual(gpusOf(byName.resources), ["GPU-B"]);
      const tomb = await query.get({ kind: "uid", uid: "job-1" }, {
        includeDeleted: true,
        includeResources: true,
      });
      assert.equal(tomb.deleted, true);
      assert.deepEqual(
        gpusOf(tomb.resources),
        [],
        "the old pod holds nothing once the kubelet stopped listing it",
      );
    } finally {
      await tearDown(s);
    }
  },
});

Deno.test({
  name: peer.name(
    "podresources: RESOURCE_EXHAUSTED from the kubelet is backed off, counted, and keeps what agents see",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const s = await setUp();
    const { fake, h, query } = s;
    try {
      await setPods(h, [makePod({ uid: "u1", name: "a", namespace: "ml" })]);
      await fake.setList([gpuPod("ml", "a", ["GPU-1"])]);
      await h.daemon.pollPodResources();
      await fake.setList([]);
      await fake.refuse(3);
      const delays: number[] = [];
      for (let i = 0; i < 3; i++) {
        const result = await h.daemon.pollPodResources();
        assert.equal(result?.outcome, "rate_limited");
        delays.push(result!.nextDelayMs);
      }
      assert.ok(delays[0]! >= 800 && delays[0]! <= 1200, `first wait about 1 s: ${delays}`);
      assert.ok(delays[1]! > delays[0]! && delays[2]! > delays[1]!, `doubling: ${delays}`);
      const errors = h.daemon.registry.metrics.podResourcesErrors;
      assert.equal(await metricValue(errors, { call: "list", reason: "rate_limited" }), 3);
      // Refused: the last answer stands.
      assert.equal((await query.get({ kind: "deviceId", id: "GPU-1" })).pod.metadata.name, "a");
      assert.equal((await h.daemon.pollPodResources())?.outcome, "ok");
      await assert.rejects(query.get({ kind: "deviceId", id: "GPU-1" }), /not found/);
      const calls = await fake.calls();
      assert.equal(calls.List, 5, "one call per poll, none retried behind the daemon's back");
    } finally {
      await tearDown(s);
    }
  },
});

Deno.test("podresources: with no server, or switched off, the feature is off and nothing else is affected", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-podresources-" });
  try {
    for (const endpoint of [`unix://${dir}/absent.sock`, "none"]) {
      await using h = await startHarness({ flags: ["--pod-resources-endpoint", endpoint] });
      using client = new PodsClient({ socket: h.socket });
      const query = new PodQueryClient(client);
      await setPods(h, [makePod({ uid: "u1", name: "a" })]);
      const polled = await h.daemon.pollPodResources();
      assert.equal(polled?.outcome, endpoint === "none" ? undefined : "failed");
      assert.equal(h.daemon.gate.isOpen, true);
      assert.equal((await h.http("/readyz")).status, 200, "readiness does not wait for it");
      assert.equal((await client.listPods()).length, 1);
      const listed = await query.list({}, { includeResources: true });
      assert.deepEqual([listed.pods.length, listed.resources], [1, []]);
      const devices = await query.listDevices();
      assert.equal(devices.available, false);
      assert.match(devices.message, endpoint === "none" ? /none/ : /absent\.sock/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: peer.name(
    "pods-api devices: allocations, a device's holder, the node's free devices, list -o wide",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const s = await setUp();
    const { fake, h } = s;
    try {
      await setPods(h, [
        makePod({ uid: "u-t", name: "trainer-0", namespace: "ml", containers: ["main"] }),
        makePod({ uid: "u-w", name: "web", namespace: "shop" }),
      ]);
      await fake.setList([
        podResources("ml", "trainer-0", [
          containerResources("main", {
            devices: [["nvidia.com/gpu", ["GPU-8f2c"], [0]]],
            cpuIds: [2, 3, 66],
            memory: [["hugepages-1Gi", 2 ** 31, [0]]],
          }),
        ]),
      ]);
      await fake.setAllocatable({
        devices: [
          { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-8f2c"], numaNodes: [0] },
          { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-77ee"], numaNodes: [1] },
        ],
        cpuIds: [0, 1, 2, 3, 66],
        memory: [],
      });
      await h.daemon.pollPodResources();
      const run = async (command: "devices" | "list", ...args: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await runClientCommand(command, [...args, "--socket", h.socket], {
          out: (t) => out.push(t),
          write: (t) => out.push(t),
          err: (t) => err.push(t),
          now: () => Date.UTC(2026, 0, 1, 0, 5),
          signal: new AbortController().signal,
          env: () => undefined,
        });
        assert.equal(code, 0, err.join("\n"));
        return out.join("\n");
      };
      assert.equal(
        await run("devices"),
        [
          "NAMESPACE   POD         CONTAINER   RESOURCE         DEVICE     NUMA",
          "ml          trainer-0   main        cpu              2-3,66     -",
          "ml          trainer-0   main        hugepages-1Gi    2Gi        0",
          "ml          trainer-0   main        nvidia.com/gpu   GPU-8f2c   0",
        ].join("\n"),
      );
      assert.equal(
        await run("devices", "GPU-8f2c"),
        [
          "NAMESPACE   POD         CONTAINER   RESOURCE         DEVICE     NUMA",
          "ml          trainer-0   main        nvidia.com/gpu   GPU-8f2c   0",
        ].join("\n"),
      );
      assert.equal(await run("devices", "GPU-77ee"), "GPU-77ee (nvidia.com/gpu, NUMA 1) is free");
      assert.equal(
        await run("devices", "--node"),
        [
          "RESOURCE         DEVICE     NUMA   STATE       POD            CONTAINER",
          "nvidia.com/gpu   GPU-77ee   1      free        -              -",
          "nvidia.com/gpu   GPU-8f2c   0      allocated   ml/trainer-0   main",
          "cpu              0-1        -      free        -              -",
          "cpu              2-3,66     -      allocated   ml/trainer-0   main",
        ].join("\n"),
      );
      const json = JSON.parse(
        await run("devices", "-n", "ml", "--resource", "nvidia.com/gpu", "-o", "json"),
      );
      assert.equal(json.kind, "PodResourcesList");
      assert.deepEqual(json.items.map((i: { uid: string }) => i.uid), ["u-t"]);
      const wide = (await run("list", "-o", "wide")).split("\n");
      assert.match(wide[0]!, /DEVICES$/);
      assert.match(wide.find((l) => l.includes("trainer-0"))!, /cpu:3,nvidia\.com\/gpu:1$/);
      assert.match(wide.find((l) => l.includes("web"))!, /<none>$/);
    } finally {
      await tearDown(s);
    }
  },
});
