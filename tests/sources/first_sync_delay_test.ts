import assert from "node:assert/strict";
import { withFirstSyncDelay } from "../../src/sources/first_sync_delay.ts";
import { FakePodSource } from "../../src/sources/fake/mod.ts";
import { SourceUnavailableError } from "../../src/sources/mod.ts";
import { FakeClock } from "../../src/clock.ts";
import { makePod } from "../_fixtures/pods.ts";

const signal = () => AbortSignal.timeout(1000);

Deno.test("withFirstSyncDelay() reports initializing until the delay has passed, then stays synced", async () => {
  const clock = new FakeClock(1_000);
  const source = withFirstSyncDelay(new FakePodSource({ pods: [makePod({ uid: "a" })] }), {
    delayMs: 5_000,
    clock,
  });
  assert.equal(source.kind, "fake");
  for (const at of [1_000, 5_999]) {
    clock.set(at);
    await assert.rejects(source.list(signal()), (err: unknown) => {
      assert.ok(err instanceof SourceUnavailableError);
      assert.equal(err.reason, "initializing");
      return true;
    });
  }
  clock.set(6_000);
  assert.equal((await source.list(signal())).length, 1);
  clock.set(0);
  assert.equal((await source.list(signal())).length, 1, "once synced, stays synced");
});

Deno.test("withFirstSyncDelay() passes a zero delay through and rejects a bad one", () => {
  const inner = new FakePodSource();
  const clock = new FakeClock();
  assert.equal(withFirstSyncDelay(inner, { delayMs: 0, clock }), inner);
  assert.throws(() => withFirstSyncDelay(inner, { delayMs: -1, clock }), RangeError);
  assert.throws(() => withFirstSyncDelay(inner, { delayMs: NaN, clock }), RangeError);
});
