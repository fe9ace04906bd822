// The daemon's relist loops wait on the daemon's clock (issue 38, time fully
// injected): a FakeClock advanced past the relist period brings the next
// relist at once, with no real time waited.
import assert from "node:assert/strict";
import type { PodSnapshot } from "../src/model/pod.ts";
import type { PolledSource } from "../src/sources/mod.ts";
import { startHarness } from "./_support/daemon_harness.ts";

/** Shorter than the daemon's other timers (the socket watchdog's second or more). */
const PERIOD_MS = 500;

/** A source with no pods whose reads a test can wait for. */
class ObservedSource implements PolledSource {
  readonly kind = "fake" as const;
  reads = 0;
  #read = Promise.withResolvers<void>();

  list(): Promise<readonly PodSnapshot[]> {
    this.reads++;
    this.#read.resolve();
    this.#read = Promise.withResolvers<void>();
    return Promise.resolve([]);
  }

  /** Resolves at the next read. */
  nextRead(): Promise<void> {
    return this.#read.promise;
  }
}

Deno.test("the daemon relists when its FakeClock passes the relist period, with no real wait", async () => {
  const source = new ObservedSource();
  await using h = await startHarness({
    sources: [source],
    runLoops: true,
    // With the default spacing: it arms no timer, so the one due within the
    // period is the loop's wait.
    flags: ["--relist-period", `${PERIOD_MS}ms`],
  });
  // The first read has reached the pipeline (its timeout timer is cancelled
  // by then); the loop then arms its wait for the period.
  await h.daemon.gate.waitOpen(new AbortController().signal);
  const armed = h.clock.waitForTimers(1, PERIOD_MS);
  assert.equal(await settlesSoon(armed), true, "the loop's wait is a timer of the daemon's clock");
  assert.equal(source.reads, 1, "the first read, at start");
  const second = source.nextRead();
  h.clock.advance(PERIOD_MS - 1);
  assert.equal(await settlesSoon(second), false, "not before the period is over");
  h.clock.advance(1);
  assert.equal(await settlesSoon(second), true, "once the period is over on the clock");
  assert.equal(source.reads, 2, "one more read");
});

/** Whether `promise` settles within a few turns of the event loop, with no time waited. */
async function settlesSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(() => settled = true, () => settled = true);
  for (let turn = 0; turn < 10 && !settled; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return settled;
}
