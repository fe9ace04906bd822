import assert from "node:assert/strict";
import { FakeClock, systemClock } from "../src/clock.ts";
import { clockSleep } from "../src/sleep.ts";

Deno.test("FakeClock.advance() moves time forward only when told", () => {
  const clock = new FakeClock(1_000);
  assert.equal(clock.now(), 1_000);
  assert.equal(clock.now(), 1_000);
  clock.advance(250);
  assert.equal(clock.now(), 1_250);
});

Deno.test("FakeClock.set() jumps to any time, backwards too", () => {
  const clock = new FakeClock(5_000);
  clock.set(2_000);
  assert.equal(clock.now(), 2_000);
});

Deno.test("FakeClock rejects bad times", () => {
  assert.throws(() => new FakeClock(Number.NaN), TypeError);
  const clock = new FakeClock();
  assert.throws(() => clock.advance(-1), RangeError);
  assert.throws(() => clock.advance(Infinity), RangeError);
  assert.throws(() => clock.set(Number.NaN), TypeError);
});

Deno.test("FakeClock fires timers in due order, ties in the order set, each reading its due time", () => {
  const clock = new FakeClock(10_000);
  const fired: [string, number][] = [];
  const at = (name: string) => () => fired.push([name, clock.now()]);
  clock.setTimer(300, at("c"));
  clock.setTimer(100, at("a"));
  clock.setTimer(200, at("b1"));
  clock.setTimer(200, at("b2"));
  clock.advance(99);
  assert.deepEqual(fired, []);
  assert.equal(clock.pendingTimers, 4);
  clock.advance(201);
  assert.deepEqual(fired, [["a", 10_100], ["b1", 10_200], ["b2", 10_200], ["c", 10_300]]);
  assert.equal(clock.now(), 10_300);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("FakeClock fires a timer set by another's callback in the same advance when it falls due", () => {
  const clock = new FakeClock(0);
  const fired: number[] = [];
  const every100 = () => {
    fired.push(clock.now());
    clock.setTimer(100, every100);
  };
  clock.setTimer(100, every100);
  clock.advance(350);
  assert.deepEqual(fired, [100, 200, 300]);
  assert.equal(clock.now(), 350);
  clock.advance(50);
  assert.deepEqual(fired, [100, 200, 300, 400]);
});

Deno.test("FakeClock timers: cancel, zero and negative delays, Infinity, NaN", () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  const cancel = clock.setTimer(10, () => fired.push("cancelled"));
  clock.setTimer(0, () => fired.push("zero"));
  clock.setTimer(-5, () => fired.push("negative"));
  clock.setTimer(Infinity, () => fired.push("never"));
  assert.deepEqual(fired, [], "never from setTimer itself");
  cancel();
  cancel();
  assert.equal(clock.pendingTimers, 2);
  clock.advance(0);
  assert.deepEqual(fired, ["zero", "negative"]);
  clock.advance(1e12);
  assert.deepEqual(fired, ["zero", "negative"]);
  assert.throws(() => clock.setTimer(Number.NaN, () => {}), RangeError);
});

Deno.test("FakeClock.set() steps the wall clock only: timers keep their elapsed delay", () => {
  const clock = new FakeClock(50_000);
  const fired: number[] = [];
  clock.setTimer(1000, () => fired.push(clock.now()));
  clock.set(10_000);
  clock.advance(999);
  assert.equal(fired.length, 0);
  clock.advance(1);
  assert.deepEqual(fired, [11_000]);
  clock.setTimer(1000, () => fired.push(clock.now()));
  clock.set(900_000);
  clock.advance(1000);
  assert.deepEqual(fired, [11_000, 901_000]);
});

Deno.test("FakeClock.advance() stops at a timer that throws, and the error reaches the caller", () => {
  const clock = new FakeClock(0);
  const fired: number[] = [];
  clock.setTimer(10, () => {
    throw new Error("boom");
  });
  clock.setTimer(20, () => fired.push(clock.now()));
  assert.throws(() => clock.advance(100), /boom/);
  assert.equal(clock.now(), 10);
  assert.equal(clock.pendingTimers, 1);
  clock.advance(10);
  assert.deepEqual(fired, [20]);
});

Deno.test("FakeClock.waitForTimers() resolves once enough timers fall due soon enough", async () => {
  const clock = new FakeClock(0);
  let resolved = "";
  const two = clock.waitForTimers(2).then(() => resolved += "two;");
  const soon = clock.waitForTimers(1, 1000).then(() => resolved += "soon;");
  clock.setTimer(30_000, () => {});
  await Promise.resolve();
  assert.equal(resolved, "", "one timer, and not within 1000 ms");
  clock.setTimer(1000, () => {});
  await Promise.all([two, soon]);
  assert.equal(resolved, "two;soon;");
  await clock.waitForTimers(2);
  assert.throws(() => clock.waitForTimers(0), RangeError);
});

Deno.test("systemClock.setTimer() fires once, and not after cancel", async () => {
  const fired: string[] = [];
  const cancel = systemClock.setTimer(0, () => fired.push("cancelled"));
  cancel();
  await new Promise<void>((resolve) => systemClock.setTimer(0, resolve));
  assert.deepEqual(fired, []);
  assert.throws(() => systemClock.setTimer(Number.NaN, () => {}), RangeError);
});

Deno.test("systemClock.setTimer() holds a delay past setTimeout's 2^31-1 ms instead of firing at once", async () => {
  const fired: string[] = [];
  // setTimeout alone turns this delay into 0: it would fire before the 1 ms timer below.
  const cancel = systemClock.setTimer(2 ** 31 + 5, () => fired.push("30 days"));
  await new Promise<void>((resolve) => systemClock.setTimer(1, resolve));
  cancel();
  assert.deepEqual(fired, []);
});

Deno.test("clockSleep() ends when the clock passes it or the signal aborts, leaving no timer", async () => {
  const clock = new FakeClock(0);
  const sleep = clockSleep(clock);
  let woke = false;
  const slept = sleep(500, new AbortController().signal).then(() => woke = true);
  clock.advance(499);
  await Promise.resolve();
  assert.equal(woke, false);
  clock.advance(1);
  await slept;
  const controller = new AbortController();
  const cut = sleep(60_000, controller.signal);
  assert.equal(clock.pendingTimers, 1);
  controller.abort();
  await cut;
  assert.equal(clock.pendingTimers, 0);
  await sleep(60_000, controller.signal);
  assert.equal(clock.pendingTimers, 0, "an aborted signal sets no timer");
});
