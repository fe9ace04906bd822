// The spacing of change-woken relists (`minInterval`, `--relist-min-interval`):
// under a storm of change events a source is read at most once per spacing,
// and the last change is always read. Every wait (period, spacing, timeout)
// is a FakeClock timer: the tests move time by hand.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { silentLogger } from "../../src/log.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { Relister } from "../../src/relist/relister.ts";
import { clockSleep } from "../../src/sleep.ts";
import type { PolledSource } from "../../src/sources/mod.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";
import { Prng } from "../_support/prng.ts";

const PERIOD = 1000;
const TIMEOUT = 5000;
const SPACING = 100;

/** A source that answers at once with its current version; events bump the version. */
class VersionedSource implements PolledSource {
  readonly kind = "fake" as const;
  version = 0;
  /** Clock time of every read. */
  readonly readsAt: number[] = [];

  constructor(private readonly clock: FakeClock) {}

  list(): Promise<readonly PodSnapshot[]> {
    this.readsAt.push(this.clock.now() - START);
    return Promise.resolve([makeSnapshot({ uid: `v-${this.version}` })]);
  }
}

const START = Date.UTC(2026, 0, 1);

function setup(minInterval = SPACING, period = PERIOD) {
  const clock = new FakeClock(START);
  const source = new VersionedSource(clock);
  const metrics: Metrics = createMetricsRegistry().metrics;
  /** The version each applied view showed. */
  const applied: number[] = [];
  const relister = new Relister({
    source,
    sink: (snapshots) => applied.push(Number(snapshots[0]!.uid.slice("v-".length))),
    clock,
    metrics,
    log: silentLogger,
    period,
    timeout: TIMEOUT,
    minInterval,
    sleep: clockSleep(clock),
  });
  const stop = new AbortController();
  /** A change in the source, announced as the runtime's event would be. */
  const change = () => {
    source.version++;
    relister.requestRelist();
  };
  return { clock, source, metrics, applied, relister, stop, change };
}

/**
 * Lets the relister run as far as it can without time passing: a fixed
 * number of microtask hops, more than its longest chain from a fired timer
 * to the sink (a macrotask per step would make the storm test slow).
 */
async function settle(): Promise<void> {
  for (let hop = 0; hop < 50; hop++) await Promise.resolve();
}

/** Advances the clock in steps of `step` ms, letting the relister react after each. */
async function advance(clock: FakeClock, ms: number, step = 1): Promise<void> {
  for (let left = ms; left > 0; left -= step) {
    clock.advance(Math.min(step, left));
    await settle();
  }
}

Deno.test("Relister: N change requests within the spacing cost one relist, at the spacing's end", async () => {
  const { clock, source, metrics, applied, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  assert.deepEqual(source.readsAt, [0]);
  for (let i = 0; i < 9; i++) {
    await advance(clock, 10);
    change();
    await settle();
  }
  assert.equal(clock.now() - START, 90);
  assert.deepEqual(source.readsAt, [0], "nine changes inside the spacing: no read yet");
  assert.equal(relister.dirty, true, "the changes are not lost, they wait");
  await advance(clock, 9);
  assert.deepEqual(source.readsAt, [0]);
  await advance(clock, 1);
  assert.deepEqual(source.readsAt, [0, 100], "one read when the spacing ends");
  assert.deepEqual(applied, [0, 9], "and it read the last change");
  assert.equal(await metricValue(metrics.relistWakeupsCoalesced, { source: "fake" }), 8);
  await advance(clock, 500, 50);
  assert.deepEqual(source.readsAt, [0, 100], "nothing more to read");
  stop.abort();
  await running;
  assert.equal(clock.pendingTimers, 0, "no timer outlives the loop");
});

Deno.test("Relister: a change request after the spacing relists at once", async () => {
  const { clock, source, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  await advance(clock, 150, 50);
  change();
  await settle();
  assert.deepEqual(source.readsAt, [0, 150], "no wait: the spacing since the last read is over");
  await advance(clock, 300);
  change();
  await settle();
  assert.deepEqual(source.readsAt, [0, 150, 450]);
  stop.abort();
  await running;
});

Deno.test("Relister: events arriving during a read wait for the spacing from that read's start", async () => {
  const { clock, source, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  await advance(clock, 30);
  change();
  await advance(clock, 70);
  assert.deepEqual(source.readsAt, [0, 100]);
  change(); // right after that read started: it waits for 200
  await advance(clock, 99);
  assert.deepEqual(source.readsAt, [0, 100]);
  await advance(clock, 1);
  assert.deepEqual(source.readsAt, [0, 100, 200]);
  stop.abort();
  await running;
});

Deno.test("Relister: the periodic relist is never held back by the spacing", async () => {
  const { clock, source, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  await advance(clock, PERIOD, 10);
  assert.deepEqual(source.readsAt, [0, 1000], "no events: reads at the period");
  await advance(clock, 50, 10);
  change();
  await advance(clock, 50, 10);
  assert.deepEqual(source.readsAt, [0, 1000, 1100]);
  await advance(clock, PERIOD, 10);
  assert.deepEqual(source.readsAt, [0, 1000, 1100, 2100], "the period runs from the last read");
  // An event just before the period is due: read once the spacing allows,
  // and the period starts again from that read.
  await advance(clock, PERIOD - 5, 5);
  change();
  await settle();
  assert.deepEqual(source.readsAt, [0, 1000, 1100, 2100, 3095]);
  await advance(clock, PERIOD, 5);
  assert.deepEqual(source.readsAt, [0, 1000, 1100, 2100, 3095, 4095]);
  stop.abort();
  await running;
});

Deno.test("Relister: relistOnce() is never held back, and still starts the spacing for the loop", async () => {
  const { clock, source, applied, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  await advance(clock, 10);
  source.version++;
  assert.equal(await relister.relistOnce(stop.signal), true);
  assert.equal(await relister.relistOnce(stop.signal), true);
  assert.deepEqual(source.readsAt, [0, 10, 10], "both at once, in order");
  assert.deepEqual(applied, [0, 1, 1]);
  change();
  await advance(clock, 99);
  assert.deepEqual(source.readsAt, [0, 10, 10], "the loop's change waits 100 ms from 10");
  await advance(clock, 1);
  assert.deepEqual(source.readsAt, [0, 10, 10, 110]);
  stop.abort();
  await running;
});

Deno.test("Relister: a relist with no loop running leaves no timer on the clock", async () => {
  // The spacing is measured from the last start when a woken loop needs it:
  // a timer left by each relist would be taken for the timers a test of the
  // daemon waits for on the same clock (a watch's bookmark).
  const { clock, relister, stop } = setup();
  assert.equal(await relister.relistOnce(stop.signal), true);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("Relister: spacing 0 relists at once on every request, as before", async () => {
  const { clock, source, metrics, relister, stop, change } = setup(0);
  assert.equal(relister.minInterval, 0);
  const running = relister.run(stop.signal);
  await settle();
  for (let i = 0; i < 5; i++) {
    change();
    await settle();
  }
  assert.deepEqual(source.readsAt, [0, 0, 0, 0, 0, 0], "no clock time passed: no wait");
  assert.equal(clock.pendingTimers, 1, "only the period is armed");
  for (let i = 0; i < 5; i++) change();
  await settle();
  assert.equal(source.readsAt.length, 7, "a burst is still one read");
  assert.equal(await metricValue(metrics.relistWakeupsCoalesced, { source: "fake" }), 4);
  stop.abort();
  await running;
});

Deno.test("Relister: a spacing of half the period or more is clamped to half the period", () => {
  assert.equal(setup(100, 40).relister.minInterval, 20);
  assert.equal(setup(20, 40).relister.minInterval, 20);
  assert.equal(setup(19, 40).relister.minInterval, 19);
  assert.equal(setup(100, 1000).relister.minInterval, 100);
  assert.throws(() => setup(-1), RangeError);
  assert.throws(() => setup(Number.NaN), RangeError);
});

Deno.test("Relister with a clamped spacing reads at half the period, the period still on time", async () => {
  const { clock, source, relister, stop, change } = setup(100, 40);
  const running = relister.run(stop.signal);
  await settle();
  change();
  await advance(clock, 20);
  assert.deepEqual(source.readsAt, [0, 20]);
  await advance(clock, 40);
  assert.deepEqual(source.readsAt, [0, 20, 60]);
  stop.abort();
  await running;
});

Deno.test("Relister: a shutdown during the spacing ends run() and leaves no timer", async () => {
  const { clock, source, relister, stop, change } = setup();
  const running = relister.run(stop.signal);
  await settle();
  change();
  await settle();
  stop.abort();
  await running;
  assert.deepEqual(source.readsAt, [0]);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("Relister under a random event storm: reads spaced, each event read within the spacing, the last one always", async (t) => {
  for (const seed of [1, 2, 3, 4, 5]) {
    await t.step(`seed ${seed}`, async () => {
      const prng = new Prng(seed);
      const { clock, source, applied, relister, stop, change } = setup();
      const running = relister.run(stop.signal);
      await settle();
      /** Clock time of every change event. */
      const eventsAt: number[] = [];
      for (let step = 0; step < 400; step++) {
        // Storms (several events per ms) and lulls (longer than a period).
        const gap = prng.int(10) === 0 ? prng.int(1500) : prng.int(20);
        // Millisecond steps while a spacing may be running, so reads start on time.
        await advance(clock, Math.min(gap, SPACING));
        if (gap > SPACING) await advance(clock, gap - SPACING, 50);
        const burst = 1 + prng.int(3);
        for (let i = 0; i < burst; i++) {
          change();
          eventsAt.push(clock.now() - START);
        }
        await settle();
      }
      await advance(clock, SPACING);
      assert.equal(applied.at(-1), source.version, "the last change was read");
      const reads = source.readsAt;
      for (let i = 1; i < reads.length; i++) {
        assert.ok(reads[i]! - reads[i - 1]! >= SPACING, `reads ${i - 1} and ${i} too close`);
      }
      for (const at of eventsAt) {
        const next = reads.find((r) => r >= at);
        assert.ok(next !== undefined && next - at <= SPACING, `event at ${at} read late (${next})`);
      }
      const elapsed = clock.now() - START;
      assert.ok(reads.length <= 1 + elapsed / SPACING, "at most one read per spacing");
      assert.ok(eventsAt.length > 3 * reads.length, "the storm was coalesced");
      stop.abort();
      await running;
      assert.equal(clock.pendingTimers, 0);
    });
  }
});
