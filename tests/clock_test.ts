import assert from "node:assert/strict";
import { FakeClock } from "../src/clock.ts";

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
