import assert from "node:assert/strict";
import { DEFAULT_STALE_AFTER, SyncGate } from "../../src/relist/sync_gate.ts";
import { FakeClock } from "../_fixtures/pods.ts";

Deno.test("SyncGate stays closed until every source has synced", () => {
  const gate = new SyncGate({ sources: ["cri", "static", "kubelet"], clock: new FakeClock() });
  assert.equal(gate.isOpen, false);
  assert.deepEqual(gate.pending(), ["cri", "static", "kubelet"]);
  gate.markSynced("static");
  gate.markSynced("static");
  assert.deepEqual(gate.pending(), ["cri", "kubelet"]);
  gate.markSynced("cri");
  assert.equal(gate.isOpen, false);
  gate.markSynced("kubelet");
  assert.equal(gate.isOpen, true);
  assert.deepEqual(gate.pending(), []);
});

Deno.test("SyncGate with no sources is open", () => {
  const gate = new SyncGate({ sources: [], clock: new FakeClock() });
  assert.equal(gate.isOpen, true);
  assert.deepEqual(gate.health(0), { ready: true, reasons: [] });
});

Deno.test("SyncGate.markSynced() rejects an unknown source", () => {
  const gate = new SyncGate({ sources: ["cri"], clock: new FakeClock() });
  assert.throws(() => gate.markSynced("crio"), RangeError);
  assert.throws(
    () => new SyncGate({ sources: [], clock: new FakeClock(), staleAfter: 0 }),
    RangeError,
  );
});

Deno.test("SyncGate.health() reports unsynced and stale sources without closing", () => {
  const clock = new FakeClock();
  const gate = new SyncGate({ sources: ["cri", "static"], clock });
  const start = clock.now();
  assert.deepEqual(gate.health(start), {
    ready: false,
    reasons: [
      'source "cri" has not completed its first read',
      'source "static" has not completed its first read',
    ],
  });
  gate.markSynced("cri");
  gate.markSynced("static");
  assert.equal(gate.lastSuccess("cri"), start);
  assert.deepEqual(gate.health(start + DEFAULT_STALE_AFTER), { ready: true, reasons: [] });
  clock.advance(60_000);
  gate.markSynced("static");
  const later = start + DEFAULT_STALE_AFTER + 1_000;
  assert.deepEqual(gate.health(later), {
    ready: false,
    reasons: ['source "cri" last read 181 s ago (threshold 180 s)'],
  });
  assert.equal(gate.isOpen, true, "a stale source does not close the gate");
  clock.advance(DEFAULT_STALE_AFTER);
  assert.deepEqual(gate.notReadyReasons(), ['source "cri" last read 240 s ago (threshold 180 s)']);
  gate.markSynced("cri");
  assert.equal(gate.health(clock.now()).ready, true);
  assert.deepEqual(gate.notReadyReasons(), []);
});

Deno.test("SyncGate.health() uses the configured threshold", () => {
  const clock = new FakeClock();
  const gate = new SyncGate({ sources: ["cri"], clock, staleAfter: 5_000 });
  gate.markSynced("cri");
  assert.equal(gate.health(clock.now() + 5_000).ready, true);
  assert.equal(gate.health(clock.now() + 5_001).ready, false);
});

Deno.test("SyncGate.waitOpen() resolves when the last source syncs", async () => {
  const gate = new SyncGate({ sources: ["cri", "static"], clock: new FakeClock() });
  const signal = new AbortController().signal;
  let opened = false;
  const waiting = gate.waitOpen(signal).then(() => opened = true);
  gate.markSynced("cri");
  await Promise.resolve();
  assert.equal(opened, false);
  gate.markSynced("static");
  await waiting;
  assert.equal(opened, true);
  await gate.waitOpen(signal);
});

Deno.test("SyncGate.waitOpen() rejects with the signal's reason on abort", async () => {
  const gate = new SyncGate({ sources: ["cri"], clock: new FakeClock() });
  const controller = new AbortController();
  const waiting = gate.waitOpen(controller.signal);
  controller.abort(new Error("shutting down"));
  await assert.rejects(waiting, { message: "shutting down" });
  await assert.rejects(gate.waitOpen(controller.signal), { message: "shutting down" });
  gate.markSynced("cri");
  await gate.waitOpen(controller.signal);
});

Deno.test("SyncGate.vouch(): a watched source is never stale while it vouches, and ages from when it stops", () => {
  const clock = new FakeClock(0);
  const gate = new SyncGate({ sources: ["apiserver"], clock, staleAfter: 1000 });
  gate.markSynced("apiserver");
  gate.vouch("apiserver", true);
  clock.advance(60_000);
  assert.deepEqual(gate.health(clock.now()).reasons, [], "a silent watch is not stale");
  gate.vouch("apiserver", false);
  assert.deepEqual(gate.health(clock.now()).reasons, [], "its view was current until it failed");
  clock.advance(1001);
  assert.match(gate.health(clock.now()).reasons.join(), /source "apiserver" last read 1 s ago/);
});
