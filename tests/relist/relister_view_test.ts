// Relister.changes.view(): a source that took a change into its own view
// pushes it, and the view is handed on without a read, in order with the
// relists around it.
import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import type { Metrics } from "../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import { Relister } from "../../src/relist/relister.ts";
import { VIEW_BURST } from "../../src/relist/_view_budget.ts";
import { type PolledSource, SourceUnavailableError } from "../../src/sources/mod.ts";
import { FakeClock, makeSnapshot } from "../_fixtures/pods.ts";
import { metricValue } from "../_support/metric_value.ts";
import { FakeSleeps } from "./_fake_sleeps.ts";

/** A source whose reads are answered by the test, with a view of its own. */
class HeldSource implements PolledSource {
  readonly kind = "cri" as const;
  held: readonly PodSnapshot[] = [];
  reads = 0;
  #answers: { resolve: (pods: readonly PodSnapshot[]) => void; reject: (e: unknown) => void }[] =
    [];

  list(): Promise<readonly PodSnapshot[]> {
    this.reads++;
    return new Promise((resolve, reject) => this.#answers.push({ resolve, reject }));
  }

  /** Answers the oldest read with `pods` (and holds them as the view). */
  answer(pods: readonly PodSnapshot[]): void {
    this.held = pods;
    this.#answers.shift()!.resolve(pods);
  }

  fail(): void {
    this.#answers.shift()!.reject(new SourceUnavailableError("down", { reason: "unavailable" }));
  }
}

function setup(minInterval = 0) {
  const source = new HeldSource();
  const sleeps = new FakeSleeps();
  const clock = new FakeClock();
  const metrics: Metrics = createMetricsRegistry().metrics;
  const received: (readonly PodSnapshot[])[] = [];
  const relister = new Relister({
    source,
    sink: (snapshots) => received.push(snapshots),
    clock,
    metrics,
    log: silentLogger,
    period: 1000,
    timeout: 777,
    minInterval,
    sleep: sleeps.sleep,
  });
  // The source took a change into its view: it pushes the view it holds.
  const push = () => relister.changes.view(source.held);
  return { source, metrics, received, relister, sleeps, clock, push };
}

const signal = new AbortController().signal;

Deno.test("A view pushed before the first relist asks for a relist instead", () => {
  const { received, relister, push } = setup();
  push();
  assert.equal(relister.dirty, true);
  assert.deepEqual(received, []);
});

Deno.test("A pushed view is handed on at once when no relist runs", async () => {
  const { source, metrics, received, relister, push } = setup();
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  assert.equal(await first, true);
  const changed = [makeSnapshot({ uid: "a" }), makeSnapshot({ uid: "b" })];
  source.held = changed;
  push();
  assert.equal(received.at(-1), changed, "handed on before the push returned");
  assert.equal(source.reads, 1, "without a read");
  assert.equal(relister.dirty, false);
  assert.equal(await metricValue(metrics.sourcePods, { source: "cri" }), 2);
});

Deno.test("A view pushed during a relist waits for it, and only the latest of several is handed on", async () => {
  const { source, received, relister } = setup();
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  await first;
  const second = relister.relistOnce(signal);
  const listed = [makeSnapshot({ uid: "b" })];
  const taken = [makeSnapshot({ uid: "b" }), makeSnapshot({ uid: "c" })];
  relister.changes.view([makeSnapshot({ uid: "x" })]);
  relister.changes.view([makeSnapshot({ uid: "y" })]);
  relister.changes.view(taken);
  assert.equal(received.length, 1, "nothing handed on while the read is out");
  source.answer(listed);
  await second;
  await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(received.slice(1), [listed, taken], "the read's view, then the pushed one");
  // A relist asked for now comes after the view, not before it.
  const third = relister.relistOnce(signal);
  source.answer(taken);
  await third;
  assert.equal(received.length, 4);
});

Deno.test("A view pushed while the source fails asks for a relist instead", async () => {
  const { source, received, relister, push } = setup();
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  await first;
  const second = relister.relistOnce(signal);
  source.fail();
  assert.equal(await second, false);
  push();
  assert.equal(relister.dirty, true);
  assert.equal(received.length, 1);
});

Deno.test("Pushed views: a few are handed on at once, then at most one per minInterval, the latest at the end", async () => {
  const { source, received, relister, sleeps, clock, push } = setup(100);
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  await first;
  // A kubelet's container start is a few changes a few ms apart: each goes at once.
  for (let i = 0; i < VIEW_BURST; i++) {
    source.held = [makeSnapshot({ uid: `b${i}` })];
    push();
    assert.equal(received.length, 2 + i, `view ${i + 1} of a burst goes at once`);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  clock.advance(30);
  source.held = [makeSnapshot({ uid: "c" })];
  push();
  source.held = [makeSnapshot({ uid: "d" })];
  push();
  assert.equal(received.length, 1 + VIEW_BURST, "the next ones wait");
  assert.ok(sleeps.waiting.includes(70), "for what is left of the interval");
  clock.advance(70);
  sleeps.fire(70);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(received.slice(1 + VIEW_BURST), [source.held], "one view, the latest");
});

Deno.test("Pushed views earn one more immediate hand-on per minInterval of quiet", async () => {
  const { source, received, relister, sleeps, clock, push } = setup(100);
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  await first;
  for (let i = 0; i < VIEW_BURST; i++) {
    push();
    await tick();
  }
  assert.equal(received.length, 1 + VIEW_BURST);
  clock.advance(100);
  push();
  await tick();
  assert.equal(received.length, 2 + VIEW_BURST, "one earned in 100 ms goes at once");
  push();
  assert.equal(received.length, 2 + VIEW_BURST, "the next waits");
  assert.ok(sleeps.waiting.includes(100), `a whole interval: ${sleeps.waiting}`);
});

Deno.test("A pushed view that a relist started after covers is dropped, never handed on after it", async () => {
  const { source, received, relister, sleeps, clock } = setup(100);
  const first = relister.relistOnce(signal);
  source.answer([makeSnapshot({ uid: "a" })]);
  await first;
  for (let i = 0; i < VIEW_BURST; i++) {
    relister.changes.view([makeSnapshot({ uid: `b${i}` })]);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  const stale = [makeSnapshot({ uid: "stale" })];
  relister.changes.view(stale);
  assert.equal(received.length, 1 + VIEW_BURST, "the pushed view waits for the budget");
  // A relist starts while it waits, and reads what the source holds now.
  const fresh = [makeSnapshot({ uid: "fresh" })];
  const second = relister.relistOnce(signal);
  source.answer(fresh);
  assert.equal(await second, true);
  clock.advance(100);
  sleeps.fire(100);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(received.at(-1), fresh, "the read's view stays the last");
  assert.ok(!received.includes(stale), "the older pushed view is never handed on");
});
