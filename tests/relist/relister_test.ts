import assert from "node:assert/strict";
import { createLogger, type Logger, silentLogger } from "../../src/log.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { Relister, type RelisterOptions } from "../../src/relist/relister.ts";
import { type PolledSource, SourceUnavailableError } from "../../src/sources/mod.ts";
import { FakeClock, makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";
import { FakeSleeps } from "./_fake_sleeps.ts";

/** A source that answers from `pods`, or fails or hangs as scripted. */
class ScriptedSource implements PolledSource {
  readonly kind = "fake" as const;
  pods: PodSnapshot[] = [];
  /** Errors to throw on the next calls, in order. */
  failures: unknown[] = [];
  /** Never answer (and ignore the signal). */
  hang = false;
  /** Clock time each call takes. */
  latency = 0;
  calls = 0;
  signals: AbortSignal[] = [];
  clock: FakeClock;

  constructor(clock: FakeClock) {
    this.clock = clock;
  }

  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    this.calls++;
    this.signals.push(signal);
    this.clock.advance(this.latency);
    if (this.hang) return new Promise(() => {});
    const failure = this.failures.shift();
    if (failure !== undefined) return Promise.reject(failure);
    return Promise.resolve(this.pods);
  }
}

const TIMEOUT = 777;

function setup(options: Partial<RelisterOptions> = {}) {
  const clock = new FakeClock();
  const source = new ScriptedSource(clock);
  const sleeps = new FakeSleeps();
  const metrics: Metrics = createMetricsRegistry().metrics;
  const received: (readonly PodSnapshot[])[] = [];
  const relister = new Relister({
    source,
    sink: (snapshots) => received.push(snapshots),
    clock,
    metrics,
    log: silentLogger,
    period: 1000,
    timeout: TIMEOUT,
    sleep: sleeps.sleep,
    ...options,
  });
  return { clock, source, sleeps, metrics, received, relister };
}

function captureLog(): { log: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  return {
    log: createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line)) }),
    lines,
  };
}

Deno.test("Relister.relistOnce() hands the view to the sink and records success", async () => {
  const { clock, source, metrics, received, relister, sleeps } = setup();
  source.pods = [makeSnapshot({ uid: "a" }), makeSnapshot({ uid: "b" })];
  source.latency = 20;
  assert.equal(relister.feed.synced, false);
  assert.equal(await relister.relistOnce(new AbortController().signal), true);
  assert.deepEqual(received, [source.pods]);
  assert.equal(relister.feed.synced, true);
  assert.equal(relister.feed.lastSuccessAt, clock.now());
  assert.equal(relister.feed.lastError, undefined);
  assert.equal(relister.name, "fake");
  assert.equal(await metricValue(metrics.sourcePods, { source: "fake" }), 2);
  assert.equal(await metricValue(metrics.sourceSynced, { source: "fake" }), 1);
  assert.equal(
    await metricValue(metrics.relistLastSuccess, { source: "fake" }),
    clock.now() / 1000,
  );
  assert.equal(await metricValue(metrics.relistDuration, { source: "fake" }, "_count"), 1);
  assert.equal(await metricValue(metrics.relistDuration, { source: "fake" }, "_sum"), 0.02);
  assert.equal(sleeps.pending.length, 0, "the timeout wait is cancelled");
});

Deno.test("Relister.relistOnce() keeps the previous state when the source fails", async () => {
  const { log, lines } = captureLog();
  const { source, metrics, received, relister } = setup({ log, name: "cri" });
  const signal = new AbortController().signal;
  source.failures = [new SourceUnavailableError("Cannot reach runtime", { reason: "unreachable" })];
  assert.equal(await relister.relistOnce(signal), false);
  assert.equal(relister.feed.synced, false);
  assert.equal(await metricValue(metrics.sourceSynced, { source: "cri" }), 0);
  source.pods = [makeSnapshot({ uid: "a" })];
  assert.equal(await relister.relistOnce(signal), true);
  const lastSuccess = relister.feed.lastSuccessAt;
  source.failures = [new Error("boom"), new Error("boom again")];
  assert.equal(await relister.relistOnce(signal), false);
  assert.equal(await relister.relistOnce(signal), false);
  assert.deepEqual(received, [source.pods], "the sink only sees successful views");
  assert.equal(relister.feed.synced, true);
  assert.equal(relister.feed.lastSuccessAt, lastSuccess);
  assert.equal((relister.feed.lastError as Error).message, "boom again");
  assert.equal(relister.feed.consecutiveFailures, 2);
  assert.equal(
    await metricValue(metrics.relistErrors, { source: "cri", reason: "unreachable" }),
    1,
  );
  assert.equal(await metricValue(metrics.relistErrors, { source: "cri", reason: "error" }), 2);
  assert.equal(await metricValue(metrics.sourceSynced, { source: "cri" }), 1);
  assert.equal(await metricValue(metrics.relistDuration, { source: "cri" }, "_count"), 4);
  const failures = lines.filter((l) => l.msg.startsWith("relist failed")).map((l) => l.level);
  assert.deepEqual(failures, ["warn", "warn", "debug"], "one warning per outage or new cause");
  assert.ok(lines.some((l) => l.msg === "relist recovered"));
});

Deno.test("Relister.relistOnce() gives up on a source that does not answer in time", async () => {
  const { source, sleeps, metrics, received, relister } = setup();
  source.hang = true;
  const result = relister.relistOnce(new AbortController().signal);
  assert.deepEqual(sleeps.pending.map((e) => e.ms), [TIMEOUT]);
  sleeps.fire(TIMEOUT);
  assert.equal(await result, false);
  assert.ok(source.signals[0]?.aborted, "the source's call is aborted");
  assert.ok(relister.feed.lastError instanceof SourceUnavailableError);
  assert.equal((relister.feed.lastError as SourceUnavailableError).reason, "timeout");
  assert.equal(await metricValue(metrics.relistErrors, { reason: "timeout" }), 1);
  assert.deepEqual(received, []);
});

Deno.test("Relister.relistOnce() stops quietly when its signal aborts", async () => {
  const { source, sleeps, metrics, relister } = setup();
  source.hang = true;
  const controller = new AbortController();
  const result = relister.relistOnce(controller.signal);
  controller.abort();
  assert.equal(await result, false);
  assert.equal(relister.feed.lastError, undefined);
  assert.equal(relister.feed.consecutiveFailures, 0);
  assert.equal(await metricValue(metrics.relistErrors, { reason: "timeout" }), 0);
  assert.equal(sleeps.pending.length, 0);
  assert.equal(await relister.relistOnce(controller.signal), false);
  assert.equal(source.calls, 1, "an aborted signal does not call the source");
});

Deno.test("Relister.relistOnce() counts a failing sink", async () => {
  const { metrics, relister } = setup({
    sink: () => {
      throw new Error("bug");
    },
  });
  assert.equal(await relister.relistOnce(new AbortController().signal), false);
  assert.equal(await metricValue(metrics.relistErrors, { reason: "sink" }), 1);
  assert.equal(relister.feed.synced, false);
});

Deno.test("Relister.run() relists every period and backs off while the source fails", async () => {
  const { source, sleeps, relister, received } = setup({ period: 1000, maxBackoff: 5000 });
  for (const ms of [1000, 2000, 4000, 5000]) sleeps.instant.add(ms);
  source.failures = Array.from({ length: 5 }, () => new Error("down"));
  const controller = new AbortController();
  // Stop during the 8th read.
  const list = source.list.bind(source);
  source.list = (signal) => {
    if (source.calls === 7) controller.abort();
    return list(signal);
  };
  await relister.run(controller.signal);
  const waits = sleeps.log.filter((ms) => ms !== TIMEOUT);
  assert.deepEqual(waits, [1000, 2000, 4000, 5000, 5000, 1000, 1000]);
  assert.equal(source.calls, 8);
  assert.equal(received.length, 2, "the 8th read was abandoned");
  assert.equal(relister.nextDelay, 1000);
  assert.equal(sleeps.pending.length, 0);
});

Deno.test("Relister.run() refuses to run twice at once", async () => {
  const { sleeps, relister } = setup();
  const controller = new AbortController();
  const running = relister.run(controller.signal);
  await assert.rejects(relister.run(controller.signal), TypeError);
  controller.abort();
  await running;
  assert.equal(sleeps.pending.length, 0);
});

Deno.test("Relister rejects bad durations", () => {
  for (const bad of [{ period: 0 }, { timeout: -1 }, { maxBackoff: Number.NaN }]) {
    assert.throws(() => setup(bad), RangeError);
  }
});

Deno.test("Relister.run() with the default timer stops at once on abort", async () => {
  const controller = new AbortController();
  let reads = 0;
  const { relister } = setup({
    sleep: undefined,
    period: 60_000,
    timeout: 60_000,
    sink: () => {
      reads++;
      // Abort while the loop waits out its period on a real timer.
      queueMicrotask(() => queueMicrotask(() => controller.abort()));
    },
  });
  await relister.run(controller.signal);
  assert.equal(reads, 1);
});
