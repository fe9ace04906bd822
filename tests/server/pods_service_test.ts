import assert from "node:assert/strict";
import { FieldMaskCache } from "../../src/fieldmask/mod.ts";
import {
  decodeGetPodResponse,
  decodeListPodsResponse,
  decodePod,
  decodePodWatchResponse,
  decodeWatchPodsEvent,
  encodeGetPodRequest,
  encodePod,
  POD_SCHEMA,
  WATCH_EVENT_TYPE,
} from "../../src/proto/mod.ts";
import { STATUS, toStatus } from "../../src/server/errors.ts";
import { PodsService } from "../../src/server/pods_service.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";
import { type InProcessCore, inProcessCore } from "../_support/in_process_core.ts";
import { metricValue } from "../_support/metric_value.ts";
import { collectingSink, ctxOf } from "../_support/collecting_sink.ts";

interface Setup extends InProcessCore {
  service: PodsService;
}

function setup(options: { maxWatchers?: number } = {}): Setup {
  const c = inProcessCore(options);
  const service = new PodsService({
    core: c.core,
    masks: new FieldMaskCache(POD_SCHEMA),
    encode: encodePod,
  });
  return { ...c, service };
}

/** Runs a call (handlers may throw before returning a promise) and returns its status code. */
async function rpcCode(call: () => Promise<unknown>): Promise<number> {
  try {
    await call();
  } catch (error) {
    // What the client would read: the status the one table gives.
    const { code, internalCause } = toStatus(error);
    assert.equal(internalCause, undefined, `unexpected ${error}`);
    return code;
  }
  assert.fail("the call succeeded");
}

const A = makeSnapshot({ uid: "uid-a", name: "a" });
const B = makeSnapshot({ uid: "uid-b", name: "b" });

Deno.test("PodsService.listPods() answers every pod, sorted by UID, masked as asked", async () => {
  const s = setup();
  s.apply([B, A]);
  const all = decodeListPodsResponse((await s.service.listPods(ctxOf())).message);
  assert.deepEqual(all.map((bytes) => decodePod(bytes).metadata.uid), ["uid-a", "uid-b"]);
  const masked = decodeListPodsResponse(
    (await s.service.listPods(ctxOf({ "x-kubernetes-fieldmask": "status.phase" }))).message,
  ).map((bytes) => decodePod(bytes));
  assert.deepEqual(masked.map((p) => p.status), [{ phase: "Running" }, { phase: "Running" }]);
  assert.deepEqual(masked.map((p) => p.spec), [undefined, undefined], "the spec is masked out");
  assert.deepEqual(masked.map((p) => p.metadata.uid), ["uid-a", "uid-b"], "identity is kept");
});

Deno.test("PodsService unary handlers refuse calls with the status DESIGN.md §9 gives", async (t) => {
  const get = (s: Setup) => () => s.service.getPod(encodeGetPodRequest("uid-a"), ctxOf());
  const cases: { name: string; arrange(s: Setup): void; code: number }[] = [
    {
      name: "sources not synced",
      arrange: (s) => s.gate.isOpen = false,
      code: STATUS.FAILED_PRECONDITION,
    },
    {
      name: "token bucket empty",
      arrange: (s) => s.limiter.tokens = 0,
      code: STATUS.RESOURCE_EXHAUSTED,
    },
    { name: "shutting down", arrange: (s) => s.shutdown.abort(), code: STATUS.UNAVAILABLE },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const s = setup();
      s.apply([A]);
      c.arrange(s);
      assert.equal(await rpcCode(() => s.service.listPods(ctxOf())), c.code);
      assert.equal(await rpcCode(get(s)), c.code);
    });
  }
  await t.step("a rate-limited call is counted by method", async () => {
    const s = setup();
    s.limiter.tokens = 0;
    await rpcCode(() => s.service.listPods(ctxOf()));
    assert.equal(await metricValue(s.metrics.rateLimited, { method: "list" }), 1);
  });
});

Deno.test("PodsService.getPod() finds a pod by UID, NOT_FOUND or INVALID_ARGUMENT otherwise", async (t) => {
  const s = setup();
  s.apply([A, B]);
  await t.step("a known UID", async () => {
    const message = (await s.service.getPod(encodeGetPodRequest("uid-b"), ctxOf())).message;
    assert.equal(decodePod(decodeGetPodResponse(message)).metadata.name, "b");
  });
  const cases = [
    { name: "an unknown UID", uid: "uid-z", code: STATUS.NOT_FOUND },
    { name: "an empty UID", uid: "", code: STATUS.INVALID_ARGUMENT },
    { name: "a malformed UID", uid: "../etc", code: STATUS.INVALID_ARGUMENT },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      assert.equal(
        await rpcCode(() => s.service.getPod(encodeGetPodRequest(c.uid), ctxOf())),
        c.code,
      );
    });
  }
  await t.step("bytes that are not a GetPodRequest", async () => {
    const code = await rpcCode(() => s.service.getPod(Uint8Array.of(0x0a, 0x05), ctxOf()));
    assert.equal(code, STATUS.INVALID_ARGUMENT);
  });
});

Deno.test("PodsService.watchPods() sends the pods, INITIAL_SYNC_COMPLETE, then each change", async () => {
  const s = setup();
  s.apply([A]);
  const client = new AbortController();
  const sink = collectingSink();
  const watching = s.service.watchPods(ctxOf({}, "v1alpha1", client.signal), sink);
  while (sink.messages.length < 2) await sink.sent;
  assert.equal(s.core.watchers, 1);
  s.apply([A, B]);
  while (sink.messages.length < 3) await sink.sent;
  const events = sink.messages.map(decodeWatchPodsEvent);
  assert.deepEqual(events.map((e) => e.type), [
    WATCH_EVENT_TYPE.ADDED,
    WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE,
    WATCH_EVENT_TYPE.ADDED,
  ]);
  assert.equal(decodePod(events[2]!.pod!).metadata.uid, "uid-b");
  client.abort();
  s.apply([B]);
  assert.equal(await rpcCode(() => watching), STATUS.CANCELLED);
  assert.equal(s.core.watchers, 0);
});

Deno.test("PodsService.watchPods() writes a batch of items at once: the initial list, then what one apply changed", async () => {
  const s = setup();
  const C = makeSnapshot({ uid: "uid-c", name: "c" });
  s.apply([A, B, C]);
  const client = new AbortController();
  const sink = collectingSink();
  const watching = s.service.watchPods(ctxOf({}, "v1alpha1", client.signal), sink);
  while (sink.messages.length < 4) await sink.sent;
  assert.deepEqual(sink.writes, [4], "three ADDED and INITIAL_SYNC_COMPLETE, one write");
  s.apply([
    makeSnapshot({ uid: "uid-a", name: "a", labels: { v: "2" } }),
    makeSnapshot({ uid: "uid-b", name: "b", labels: { v: "2" } }),
  ]);
  while (sink.messages.length < 7) await sink.sent;
  assert.deepEqual(sink.writes, [4, 3], "two MODIFIED and a DELETED, one write");
  const events = sink.messages.map(decodeWatchPodsEvent);
  assert.deepEqual(
    events.map((e) => e.type).slice(4).sort(),
    [
      WATCH_EVENT_TYPE.MODIFIED,
      WATCH_EVENT_TYPE.MODIFIED,
      WATCH_EVENT_TYPE.DELETED,
    ].sort(),
  );
  client.abort();
  s.apply([]);
  assert.equal(await rpcCode(() => watching), STATUS.CANCELLED);
});

Deno.test("PodsService.watchPods() on the package-less service has no INITIAL_SYNC_COMPLETE", async () => {
  const s = setup();
  s.apply([A]);
  const sink = collectingSink();
  const watching = s.service.watchPods(ctxOf({}, "v1"), sink);
  while (sink.messages.length < 1) await sink.sent;
  s.apply([]);
  while (sink.messages.length < 2) await sink.sent;
  const pods = sink.messages.map((m) => decodePod(decodePodWatchResponse(m)));
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["uid-a", "uid-a"]);
  assert.ok(pods[1]!.metadata.deletionTimestamp, "the deleted pod comes once more, marked");
  s.shutdown.abort();
  s.hub.close();
  assert.equal(await rpcCode(() => watching), STATUS.UNAVAILABLE);
});

Deno.test("PodsService.watchPods() refuses watchers beyond maxWatchers", async () => {
  const s = setup({ maxWatchers: 1 });
  const client = new AbortController();
  const sink = collectingSink();
  const first = s.service.watchPods(ctxOf({}, "v1alpha1", client.signal), sink);
  while (sink.messages.length < 1) await sink.sent;
  const code = await rpcCode(() => s.service.watchPods(ctxOf(), collectingSink()));
  assert.equal(code, STATUS.RESOURCE_EXHAUSTED);
  client.abort();
  s.hub.close();
  await rpcCode(() => first);
});
