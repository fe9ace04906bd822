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
    // No spacing timer: the one timer due within the period is the loop's wait.
    flags: ["--relist-period", `${PERIOD_MS}ms`, "--relist-min-interval", "0"],
  });
  // The first read has reached the pipeline (its timeout timer is cancelled
  // by then); the loop then arms its wait for the period.
  await h.daemon.gate.waitOpen(new AbortController().signal);
  await h.clock.waitForTimers(1, PERIOD_MS);
  assert.equal(source.reads, 1, "the first read, at start");
  const started = performance.now();
  const second = source.nextRead();
  h.clock.advance(PERIOD_MS - 1);
  assert.equal(source.reads, 1, "not before the period is over");
  h.clock.advance(1);
  await second;
  assert.equal(source.reads, 2, "one more read once the period is over");
  assert.ok(performance.now() - started < PERIOD_MS, "on the clock, not on real timers");
});
