// podsapi.v1.PodQuery over the real socket with a grpc-js client: status
// codes, tokens across a reconnect, per-connection fairness, metrics.
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { PodObject } from "../../src/model/pod.ts";
import {
  decodeListResponse,
  decodePod,
  decodeQueryGetResponse,
  decodeWatchEvent,
  encodeGetRequest,
  encodeListRequest,
  encodeWatchRequest,
  type GetKeyMessage,
  QUERY_EVENT_TYPE,
  type WatchEventMessage,
} from "../../src/proto/mod.ts";
import { podQueryServiceDefinition } from "../_support/pods_service_definition.ts";
import { type Harness, startHarness } from "../_support/daemon_harness.ts";
import { makePod } from "../_fixtures/pods.ts";

type Stub = grpc.Client & {
  List(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  Get(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  Watch(req: Buffer): grpc.ClientReadableStream<Buffer>;
};

const Ctor = grpc.makeGenericClientConstructor(podQueryServiceDefinition(), "PodQuery");

function client(h: Harness): Stub {
  // A local subchannel pool: each client gets its own connection.
  return new Ctor(`unix:${h.socket}`, grpc.credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
  }) as unknown as Stub;
}

type Unary = { ok: true; body: Uint8Array } | { ok: false; code: number; details: string };

function call(stub: Stub, method: "List" | "Get", req: Uint8Array): Promise<Unary> {
  return new Promise((resolve) => {
    stub[method](Buffer.from(req), (err, res) => {
      if (err) resolve({ ok: false, code: err.code, details: err.details });
      else resolve({ ok: true, body: new Uint8Array(res!) });
    });
  });
}

const CONTAINER = "f".repeat(8) + "0123456789abcdef".repeat(3) + "01234567";

function pods(): PodObject[] {
  const web = makePod({
    uid: "u-web",
    name: "web",
    namespace: "pay",
    labels: { app: "web" },
    podIP: "fd00::5",
  });
  web.status = {
    ...web.status,
    containerStatuses: [{
      name: "app",
      ready: true,
      restartCount: 0,
      image: "x",
      imageID: "",
      containerID: `containerd://${CONTAINER}`,
    }],
  };
  return [
    web,
    makePod({ uid: "u-db", name: "db", namespace: "pay", labels: { app: "db" }, phase: "Pending" }),
    makePod({ uid: "u-dns", name: "dns", namespace: "kube-system", labels: { app: "dns" } }),
  ];
}

async function synced(h: Harness, list = pods()) {
  h.source.set(list);
  assert.equal(await h.daemon.relistOnce(), true);
}

function names(body: Uint8Array): string[] {
  return decodeListResponse(body).pods.map((p) => decodePod(p).metadata!.name!);
}

async function get(stub: Stub, key: GetKeyMessage, includeDeleted = false) {
  const res = await call(stub, "Get", encodeGetRequest({ key, includeDeleted }));
  if (!res.ok) return res;
  const msg = decodeQueryGetResponse(res.body);
  return { ok: true as const, name: decodePod(msg.pod).metadata!.name, deleted: msg.deleted };
}

/** Collects a watch's events until told to stop. */
function watch(stub: Stub, req: Parameters<typeof encodeWatchRequest>[0]) {
  const stream = stub.Watch(Buffer.from(encodeWatchRequest(req)));
  const events: WatchEventMessage[] = [];
  let wake: (() => void) | undefined;
  stream.on("data", (b: Buffer) => {
    events.push(decodeWatchEvent(new Uint8Array(b)));
    wake?.();
  });
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    stream.on("error", (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }));
    stream.on("status", (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) resolve({ code: 0, details: "" });
    });
  });
  return {
    events,
    ended,
    async waitFor(n: number) {
      while (events.length < n) await new Promise<void>((r) => wake = r);
    },
    cancel: () => stream.cancel(),
  };
}

/** The fake clock never refills a bucket: room for every call of a test. */
const ROOMY = ["--connection-rate-limit-burst", "100", "--rate-limit-burst", "100"];

Deno.test("PodQuery answers FAILED_PRECONDITION until synced, then List selects as asked", async () => {
  await using h = await startHarness({ flags: ROOMY });
  const stub = client(h);
  try {
    const early = await call(stub, "List", encodeListRequest());
    assert.deepEqual(early, {
      ok: false,
      code: grpc.status.FAILED_PRECONDITION,
      details: "pod sources are still initializing",
    });
    await synced(h);
    const all = await call(stub, "List", encodeListRequest());
    assert.ok(all.ok);
    assert.deepEqual(names(all.body).sort(), ["db", "dns", "web"]);
    assert.match(decodeListResponse(all.body).resumeToken, /^[0-9a-z]+\.\d+$/);
    const selected = await call(
      stub,
      "List",
      encodeListRequest({
        selector: {
          namespace: "pay",
          labelSelector: "app in (web,db)",
          fieldSelector: "status.phase=Running",
        },
      }),
    );
    assert.ok(selected.ok);
    assert.deepEqual(names(selected.body), ["web"]);
    const masked = await call(
      stub,
      "List",
      encodeListRequest({ selector: { labelSelector: "app=dns" }, mask: ["status.phase"] }),
    );
    assert.ok(masked.ok);
    const pod = decodePod(decodeListResponse(masked.body).pods[0]!);
    assert.equal(pod.spec, undefined);
    assert.equal(pod.status?.phase, "Running");
    const bad = await call(
      stub,
      "List",
      encodeListRequest({ selector: { labelSelector: "app in (x" } }),
    );
    assert.equal(bad.ok, false);
    assert.equal(!bad.ok && bad.code, grpc.status.INVALID_ARGUMENT);
    assert.match(!bad.ok ? bad.details : "", /label selector/);
    const badField = await call(
      stub,
      "List",
      encodeListRequest({ selector: { fieldSelector: "spec.priority=1" } }),
    );
    assert.equal(!badField.ok && badField.code, grpc.status.INVALID_ARGUMENT);
    assert.match(!badField.ok ? badField.details : "", /"spec\.priority"/);
  } finally {
    stub.close();
  }
});

Deno.test("PodQuery Get finds pods by every key and returns tombstones only when asked", async () => {
  await using h = await startHarness({ flags: ROOMY });
  const stub = client(h);
  try {
    await synced(h);
    assert.deepEqual(await get(stub, { kind: "uid", uid: "u-db" }), {
      ok: true,
      name: "db",
      deleted: false,
    });
    assert.equal((await get(stub, { kind: "name", namespace: "pay", name: "web" })).ok, true);
    assert.deepEqual(await get(stub, { kind: "containerId", id: `containerd://${CONTAINER}` }), {
      ok: true,
      name: "web",
      deleted: false,
    });
    assert.equal((await get(stub, { kind: "containerId", id: CONTAINER.slice(0, 12) })).ok, true);
    assert.equal((await get(stub, { kind: "podIp", ip: "FD00:0::5" })).ok, true);
    const short = await get(stub, { kind: "containerId", id: "ffff" });
    assert.equal(!short.ok && short.code, grpc.status.INVALID_ARGUMENT);
    const badIp = await get(stub, { kind: "podIp", ip: "10.0.0.999" });
    assert.equal(!badIp.ok && badIp.code, grpc.status.INVALID_ARGUMENT);
    const missing = await get(stub, { kind: "name", namespace: "pay", name: "nope" });
    assert.deepEqual(missing, {
      ok: false,
      code: grpc.status.NOT_FOUND,
      details: 'pod with name "pay/nope" not found',
    });
    await synced(h, pods().filter((p) => p.metadata.name !== "web"));
    const gone = await get(stub, { kind: "containerId", id: CONTAINER });
    assert.equal(!gone.ok && gone.code, grpc.status.NOT_FOUND);
    assert.deepEqual(await get(stub, { kind: "containerId", id: CONTAINER }, true), {
      ok: true,
      name: "web",
      deleted: true,
    });
    const noKey = await call(stub, "Get", new Uint8Array());
    assert.equal(!noKey.ok && noKey.code, grpc.status.INVALID_ARGUMENT);
  } finally {
    stub.close();
  }
});

Deno.test("PodQuery Watch resumes on a new connection from the last token, and OUT_OF_RANGE when too old", async () => {
  await using h = await startHarness({ flags: ["--watch-history", "5m,4"] });
  await synced(h);
  const first = client(h);
  const w = watch(first, { selector: { namespace: "pay" } });
  await w.waitFor(3);
  assert.deepEqual(w.events.map((e) => e.type), [
    QUERY_EVENT_TYPE.ADDED,
    QUERY_EVENT_TYPE.ADDED,
    QUERY_EVENT_TYPE.INITIAL_SYNC_COMPLETE,
  ]);
  const token = w.events[2]!.resumeToken;
  w.cancel();
  await w.ended;
  first.close();
  // Changes while nobody watches: db runs, web goes, dns (not selected) changes.
  const next = pods().filter((p) => p.metadata.name !== "web").map((p) =>
    p.metadata.name === "db" || p.metadata.name === "dns"
      ? { ...p, status: { phase: "Running" } }
      : p
  );
  await synced(h, next);
  const second = client(h);
  try {
    const r = watch(second, { selector: { namespace: "pay" }, resumeToken: token });
    await r.waitFor(2);
    const seen = r.events.map((e) => [e.type, decodePod(e.pod!).metadata!.name]);
    assert.deepEqual(seen.sort(), [[QUERY_EVENT_TYPE.MODIFIED, "db"], [
      QUERY_EVENT_TYPE.DELETED,
      "web",
    ]]);
    assert.ok(r.events.every((e) => e.resumeToken !== ""));
    r.cancel();
    await r.ended;
    for (let i = 0; i < 6; i++) {
      await synced(
        h,
        next.map((p) => ({ ...p, metadata: { ...p.metadata, labels: { gen: String(i) } } })),
      );
    }
    const old = watch(second, { resumeToken: token });
    const end = await old.ended;
    assert.deepEqual(end, {
      code: grpc.status.OUT_OF_RANGE,
      details: "resume token too old; list again",
    });
    const bad = watch(second, { resumeToken: "not a token" });
    assert.equal((await bad.ended).code, grpc.status.INVALID_ARGUMENT);
  } finally {
    second.close();
  }
});

Deno.test("PodQuery rate limits per connection before the shared bucket, and counts as podsapi_v1", async () => {
  await using h = await startHarness({
    flags: [
      "--connection-rate-limit-qps",
      "0.001",
      "--connection-rate-limit-burst",
      "3",
      "--rate-limit-qps",
      "0.001",
      "--rate-limit-burst",
      "20",
    ],
  });
  await synced(h);
  const noisy = client(h);
  const quiet = client(h);
  try {
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await call(noisy, "List", encodeListRequest());
      codes.push(r.ok ? 0 : r.code);
    }
    assert.deepEqual(codes, [0, 0, 0, 8, 8, 8]);
    // The noisy connection took 3 tokens of the shared 20: the quiet one is served.
    for (let i = 0; i < 3; i++) {
      assert.equal((await call(quiet, "List", encodeListRequest())).ok, true);
    }
    const metrics = (await h.http("/metrics")).body;
    assert.match(
      metrics,
      /kubelet_pod_requests_list_total\{server_api_version="podsapi_v1",status_code="ResourceExhausted"\} 3/,
    );
    assert.match(
      metrics,
      /kubelet_pod_requests_list_total\{server_api_version="podsapi_v1",status_code="OK"\} 6/,
    );
  } finally {
    noisy.close();
    quiet.close();
  }
});
