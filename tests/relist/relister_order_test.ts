// The relister's scheduling: one read of a source at a time, views applied
// in the order they were read, a read that timed out never applied, change
// requests coalesced into the loop. Time is the injected sleep: nothing here
// waits on a real timer.
import assert from "node:assert/strict";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { silentLogger } from "../../src/log.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { Relister } from "../../src/relist/relister.ts";
import { type PolledSource, SourceUnavailableError } from "../../src/sources/mod.ts";
import { FakeClock, makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";
import { Prng } from "../_support/prng.ts";
import { FakeSleeps } from "./_fake_sleeps.ts";

const PERIOD = 1000;
const TIMEOUT = 777;

/** One `list()` call the test answers by hand; it ignores its signal, as a stuck source would. */
interface Call {
  readonly index: number;
  readonly signal: AbortSignal;
  settled: boolean;
  answer(): void;
  fail(error?: Error): void;
}

/** A source whose every read stays open until the test answers it. */
class HandSource implements PolledSource {
  readonly kind = "fake" as const;
  readonly calls: Call[] = [];
  /** Answer every read at once (`answer`) or with an error (`fail`) instead of waiting. */
  auto: "answer" | "fail" | undefined;
  inFlight = 0;
  maxInFlight = 0;

  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    const index = this.calls.length;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    // The view names the read it came from.
    const view = [makeSnapshot({ uid: `read-${index}` })];
    return new Promise((resolve, reject) => {
      const call: Call = {
        index,
        signal,
        settled: false,
        answer: () => settle(() => resolve(view)),
        fail: (error = new SourceUnavailableError("down", { reason: "injected" })) =>
          settle(() => reject(error)),
      };
      const settle = (how: () => void) => {
        if (call.settled) return;
        call.settled = true;
        this.inFlight--;
        how();
      };
      this.calls.push(call);
      if (this.auto === "answer") call.answer();
      else if (this.auto === "fail") call.fail();
    });
  }

  /** The reads not answered yet. */
  get open(): Call[] {
    return this.calls.filter((c) => !c.settled);
  }
}

function setup() {
  const source = new HandSource();
  const sleeps = new FakeSleeps();
  const metrics: Metrics = createMetricsRegistry().metrics;
  /** Index of the read each applied view came from. */
  const applied: number[] = [];
  /** Reads started when each view was applied. */
  const readsAtApply: number[] = [];
  const relister = new Relister({
    source,
    sink: (snapshots) => {
      applied.push(Number(snapshots[0]!.uid.slice("read-".length)));
      readsAtApply.push(source.calls.length);
    },
    clock: new FakeClock(),
    metrics,
    log: silentLogger,
    period: PERIOD,
    timeout: TIMEOUT,
    maxBackoff: 4 * PERIOD,
    sleep: sleeps.sleep,
  });
  return {
    source,
    sleeps,
    metrics,
    applied,
    readsAtApply,
    relister,
    signal: new AbortController().signal,
  };
}

/** Lets every settled promise run its reactions (no timer is waited on). */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

Deno.test("Relister.relistOnce() queues calls: one read at a time, views applied in read order", async () => {
  const { source, applied, readsAtApply, relister, signal } = setup();
  const results = [relister.relistOnce(signal), relister.relistOnce(signal)];
  results.push(relister.relistOnce(signal));
  assert.equal(source.calls.length, 1, "the second and third wait for the first");
  for (let i = 0; i < 3; i++) {
    await settle();
    assert.equal(source.open.length, 1, `read ${i} is the only one open`);
    source.open[0]!.answer();
  }
  assert.deepEqual(await Promise.all(results), [true, true, true]);
  assert.deepEqual(applied, [0, 1, 2]);
  assert.deepEqual(readsAtApply, [1, 2, 3], "each view is applied before the next read starts");
  assert.equal(source.maxInFlight, 1);
});

Deno.test("Relister.relistOnce() never applies a read that timed out, however late it answers", async () => {
  const { source, sleeps, metrics, applied, relister, signal } = setup();
  const first = relister.relistOnce(signal);
  sleeps.fire(TIMEOUT);
  assert.equal(await first, false);
  assert.equal((relister.feed.lastError as SourceUnavailableError).reason, "timeout");
  const second = relister.relistOnce(signal);
  await settle();
  assert.equal(source.calls.length, 1, "no second read beside the one still out");
  source.calls[0]!.answer();
  await settle();
  assert.equal(source.calls.length, 2, "the next read starts once the late one is in");
  source.calls[1]!.answer();
  assert.equal(await second, true);
  assert.deepEqual(applied, [1], "read 0 answered after its timeout and was dropped");
  assert.equal(await metricValue(metrics.relistErrors, { reason: "timeout" }), 1);
  assert.equal(source.maxInFlight, 1);
});

Deno.test("Relister.relistOnce() waits for a read given up on no longer than its own timeout", async () => {
  const { source, sleeps, metrics, applied, relister, signal } = setup();
  const first = relister.relistOnce(signal);
  sleeps.fire(TIMEOUT);
  assert.equal(await first, false);
  const second = relister.relistOnce(signal);
  await settle();
  assert.deepEqual(sleeps.waiting, [TIMEOUT], "the second relist's own timeout runs");
  sleeps.fire(TIMEOUT);
  assert.equal(await second, false);
  assert.equal(source.calls.length, 1, "the stuck source was not read again");
  assert.equal(relister.feed.consecutiveFailures, 2);
  assert.equal(await metricValue(metrics.relistErrors, { reason: "timeout" }), 2);
  source.calls[0]!.answer();
  const third = relister.relistOnce(signal);
  await settle();
  source.calls[1]!.answer();
  assert.equal(await third, true);
  assert.deepEqual(applied, [1]);
});

Deno.test("Relister.requestRelist() wakes run() from its period wait; a burst costs one relist", async () => {
  const { source, sleeps, relister } = setup();
  source.auto = "answer";
  const stop = new AbortController();
  const running = relister.run(stop.signal);
  await settle();
  assert.equal(source.calls.length, 1);
  assert.deepEqual(sleeps.waiting, [PERIOD], "the loop waits out its period");
  for (let i = 0; i < 50; i++) relister.requestRelist();
  assert.equal(relister.dirty, true);
  await settle();
  assert.equal(source.calls.length, 2, "fifty requests, one relist");
  assert.equal(relister.dirty, false);
  assert.deepEqual(sleeps.waiting, [PERIOD], "then the period starts again");
  await settle();
  assert.equal(source.calls.length, 2, "no request, no early relist");
  sleeps.fire(PERIOD);
  await settle();
  assert.equal(source.calls.length, 3, "the period still relists");
  stop.abort();
  await running;
  assert.equal(source.maxInFlight, 1);
});

Deno.test("Relister.requestRelist() during a read adds exactly one relist after it", async () => {
  const { source, sleeps, applied, relister } = setup();
  const stop = new AbortController();
  const running = relister.run(stop.signal);
  assert.equal(source.open.length, 1);
  for (let i = 0; i < 10; i++) relister.requestRelist();
  source.open[0]!.answer();
  await settle();
  assert.equal(source.calls.length, 2, "the changes seen during read 0 get a read of their own");
  assert.deepEqual(sleeps.waiting, [TIMEOUT], "without waiting for the period");
  source.open[0]!.answer();
  await settle();
  assert.equal(source.calls.length, 2);
  assert.deepEqual(sleeps.waiting, [PERIOD]);
  assert.deepEqual(applied, [0, 1]);
  stop.abort();
  await running;
});

Deno.test("Relister.requestRelist() keeps the backoff of a failing source", async () => {
  const { source, sleeps, relister } = setup();
  source.auto = "fail";
  const stop = new AbortController();
  const running = relister.run(stop.signal);
  await settle();
  sleeps.fire(PERIOD);
  await settle();
  assert.equal(source.calls.length, 2);
  assert.deepEqual(sleeps.waiting, [2 * PERIOD], "backing off");
  relister.requestRelist();
  await settle();
  assert.equal(source.calls.length, 2, "a change event does not cut the backoff short");
  source.auto = "answer";
  sleeps.fire(2 * PERIOD);
  await settle();
  assert.equal(source.calls.length, 3, "the retry came at its time (and answered the request)");
  assert.equal(relister.dirty, false);
  assert.deepEqual(sleeps.waiting, [PERIOD]);
  relister.requestRelist();
  await settle();
  assert.equal(source.calls.length, 4, "healthy again: requests wake the loop");
  stop.abort();
  await running;
});

Deno.test("Relister.run() and relistOnce() share one queue", async () => {
  const { source, sleeps, applied, relister, signal } = setup();
  const stop = new AbortController();
  const running = relister.run(stop.signal);
  assert.equal(source.open.length, 1, "the loop's read");
  const outside = relister.relistOnce(signal);
  await settle();
  assert.equal(source.calls.length, 1, "the outside call waits for the loop's read");
  source.open[0]!.answer();
  await settle();
  assert.equal(source.open.length, 1, "then reads");
  source.open[0]!.answer();
  assert.equal(await outside, true);
  await settle();
  assert.deepEqual(sleeps.waiting, [PERIOD]);
  assert.deepEqual(applied, [0, 1]);
  assert.equal(source.maxInFlight, 1);
  stop.abort();
  await running;
});

Deno.test("Relister under random interleavings applies views in read order and never a timed-out one", async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    await t.step(`seed ${seed}`, async () => {
      const prng = new Prng(seed);
      const { source, sleeps, applied, readsAtApply, relister, signal } = setup();
      const stop = new AbortController();
      const running = relister.run(stop.signal);
      const outside: Promise<boolean>[] = [];
      /** Reads answered after their relist had given up on them. */
      const late = new Set<number>();
      for (let step = 0; step < 500; step++) {
        const open = source.open;
        switch (prng.int(7)) {
          case 0:
            relister.requestRelist();
            break;
          case 1:
            outside.push(relister.relistOnce(signal));
            break;
          case 2:
          case 3: {
            if (open.length === 0) break;
            const call = prng.pick(open);
            if (call.signal.aborted) late.add(call.index);
            if (prng.int(5) === 0) call.fail();
            else call.answer();
            break;
          }
          case 4:
            sleeps.fire(TIMEOUT);
            break;
          default:
            // Whatever the loop waits for (period or backoff) ends.
            for (const ms of new Set(sleeps.waiting)) if (ms !== TIMEOUT) sleeps.fire(ms);
        }
        // Let the relister get a random distance ahead before the next move.
        for (let hops = prng.int(40); hops > 0; hops--) await Promise.resolve();
        assert.ok(source.maxInFlight <= 1, `step ${step}: two reads at once`);
      }
      stop.abort();
      source.auto = "answer";
      for (const call of source.open) call.answer();
      await running;
      await Promise.all(outside);
      assert.equal(source.open.length, 0);
      assert.ok(applied.length > 20, `views were applied (${applied.length})`);
      for (let i = 1; i < applied.length; i++) {
        assert.ok(applied[i - 1]! < applied[i]!, `read ${applied[i]} applied after a newer one`);
      }
      for (const index of applied) assert.ok(!late.has(index), `timed-out read ${index} applied`);
      assert.deepEqual(
        readsAtApply,
        applied.map((index) => index + 1),
        "each view is applied before any newer read starts",
      );
      assert.ok(late.size > 0, "some reads answered after their timeout");
    });
  }
});
