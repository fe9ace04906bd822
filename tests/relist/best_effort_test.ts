import assert from "node:assert/strict";
import { createLogger } from "../../src/log.ts";
import type { JsonObject } from "../../src/model/json.ts";
import { releaseBestEffortSources, sourcesToRelease, SyncGate } from "../../src/relist/mod.ts";
import { FakeClock } from "../_fixtures/pods.ts";

Deno.test("sourcesToRelease() keeps only pending best-effort sources", () => {
  assert.deepEqual(sourcesToRelease(["cri", "kubelet", "static"], ["static", "kubelet"]), [
    "kubelet",
    "static",
  ]);
  assert.deepEqual(sourcesToRelease([], ["kubelet"]), []);
});

Deno.test("releaseBestEffortSources() opens the gate without a down best-effort source", async () => {
  const clock = new FakeClock();
  const gate = new SyncGate({ sources: ["cri", "kubelet", "static"], clock });
  const logs: JsonObject[] = [];
  const log = createLogger({ write: (line) => logs.push(JSON.parse(line)) });
  let wake: () => void = () => {};
  const waited: number[] = [];
  const sleep = (ms: number) => {
    waited.push(ms);
    return new Promise<void>((resolve) => wake = resolve);
  };
  const releasing = releaseBestEffortSources(gate, new AbortController().signal, {
    sources: ["kubelet", "static"],
    timeoutMs: 30_000,
    log,
    sleep,
  });
  gate.markSynced("cri");
  gate.markSynced("static");
  assert.equal(gate.isOpen, false, "the kubelet still holds the gate before the timeout");
  assert.deepEqual(gate.notReadyReasons(), ['source "kubelet" has not completed its first read']);
  wake();
  assert.deepEqual(await releasing, ["kubelet"]);
  assert.deepEqual(waited, [30_000]);
  assert.equal(gate.isOpen, true);
  assert.deepEqual(gate.pending(), []);
  const health = gate.health(clock.now());
  assert.equal(health.ready, true);
  assert.deepEqual(health.degraded, ['source "kubelet" has not completed its first read']);
  assert.equal(logs.filter((l) => l.level === "warn" && l.source === "kubelet").length, 1);

  // The kubelet comes back: it is synced, and nothing is degraded any more.
  gate.markSynced("kubelet");
  assert.equal(gate.health(clock.now()).degraded, undefined);
});

Deno.test("releaseBestEffortSources() never releases a required source", async () => {
  const gate = new SyncGate({ sources: ["cri", "kubelet"], clock: new FakeClock() });
  const released = await releaseBestEffortSources(gate, new AbortController().signal, {
    sources: ["kubelet"],
    timeoutMs: 0,
    log: createLogger({ write: () => {} }),
    sleep: () => Promise.resolve(),
  });
  assert.deepEqual(released, ["kubelet"]);
  assert.equal(gate.isOpen, false, "cri still blocks");
  assert.deepEqual(gate.pending(), ["cri"]);
});

Deno.test("releaseBestEffortSources() releases nothing after shutdown", async () => {
  const gate = new SyncGate({ sources: ["kubelet"], clock: new FakeClock() });
  const controller = new AbortController();
  controller.abort();
  const released = await releaseBestEffortSources(gate, controller.signal, {
    sources: ["kubelet"],
    timeoutMs: 10,
    log: createLogger({ write: () => {} }),
    sleep: () => Promise.resolve(),
  });
  assert.deepEqual(released, []);
  assert.equal(gate.isOpen, false);
});

Deno.test("SyncGate.release() wakes waiters and rejects unknown sources", async () => {
  const gate = new SyncGate({ sources: ["kubelet"], clock: new FakeClock() });
  const open = gate.waitOpen(new AbortController().signal);
  gate.release("kubelet");
  gate.release("kubelet");
  await open;
  assert.equal(gate.isOpen, true);
  assert.throws(() => gate.release("nope"), RangeError);
});
