import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { DEFAULT_BURST, DEFAULT_QPS, TokenBucket } from "../../src/ratelimit/mod.ts";

/** A clock that moves only when told to. */

function drain(bucket: TokenBucket): number {
  let taken = 0;
  while (bucket.tryTake()) taken++;
  return taken;
}

Deno.test("TokenBucket starts full and admits exactly burst calls", () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: DEFAULT_QPS, burst: DEFAULT_BURST, clock });
  assert.equal(bucket.available(), 10);
  assert.equal(drain(bucket), 10);
  assert.equal(bucket.tryTake(), false);
  assert.equal(bucket.available(), 0);
});

Deno.test("TokenBucket refills exactly at the configured rate", async (t) => {
  const cases: { name: string; qps: number; steps: number[]; tokens: number }[] = [
    { name: "10 ms at 100 qps is one token", qps: 100, steps: [10], tokens: 1 },
    { name: "9 ms at 100 qps is none", qps: 100, steps: [9], tokens: 0 },
    { name: "9.999 ms at 100 qps is none", qps: 100, steps: [9.999], tokens: 0 },
    { name: "5 ms twice at 100 qps is one token", qps: 100, steps: [5, 5], tokens: 1 },
    {
      name: "1 ms ten times at 100 qps is one token",
      qps: 100,
      steps: Array(10).fill(1),
      tokens: 1,
    },
    {
      name: "a third of 10 ms, three times, at 100 qps is one token",
      qps: 100,
      steps: Array(3).fill(10 / 3),
      tokens: 1,
    },
    {
      name: "0.1 ms a hundred times at 100 qps is one token",
      qps: 100,
      steps: Array(100).fill(0.1),
      tokens: 1,
    },
    { name: "20 ms at 100 qps is two tokens", qps: 100, steps: [20], tokens: 2 },
    { name: "1 s at 100 qps is capped at burst", qps: 100, steps: [1000], tokens: 10 },
    { name: "an hour is capped at burst", qps: 100, steps: [3_600_000], tokens: 10 },
    { name: "2 s at 0.5 qps is one token", qps: 0.5, steps: [2000], tokens: 1 },
    { name: "1999 ms at 0.5 qps is none", qps: 0.5, steps: [1999], tokens: 0 },
    { name: "10 s at 0.1 qps is one token", qps: 0.1, steps: [10_000], tokens: 1 },
    { name: "1 s in 10 steps at 0.3 qps is none", qps: 0.3, steps: Array(10).fill(100), tokens: 0 },
    { name: "333 ms in 1 ms steps at 3 qps is none", qps: 3, steps: Array(333).fill(1), tokens: 0 },
    {
      name: "334 ms in 1 ms steps at 3 qps is one token",
      qps: 3,
      steps: Array(334).fill(1),
      tokens: 1,
    },
    { name: "1 ms at 1000 qps is one token", qps: 1000, steps: [1], tokens: 1 },
    { name: "1 ms at 1e6 qps is capped at burst", qps: 1e6, steps: [1], tokens: 10 },
  ];
  for (const c of cases) {
    // Fractional milliseconds are only exact near zero: at today's epoch a
    // double resolves about 0.25 µs, so such steps start the clock at 0.
    const starts = c.steps.every(Number.isInteger) ? [0, 1_767_225_600_000] : [0];
    for (const start of starts) {
      await t.step(`${c.name} (clock at ${start})`, () => {
        const clock = new FakeClock(start);
        const bucket = new TokenBucket({ qps: c.qps, burst: 10, clock });
        drain(bucket);
        for (const step of c.steps) {
          clock.advance(step);
          // Refill on every step, as a stream of rejected calls would.
          assert.ok(bucket.available() <= c.tokens);
        }
        assert.equal(drain(bucket), c.tokens);
      });
    }
  }
});

Deno.test("TokenBucket keeps fractions of a unit across many tiny refills", () => {
  // At 1 qps a millionth of a token (one unit) takes 1 µs; steps of 0.5 µs earn
  // half a unit each, which a refill that drops fractions would never credit.
  const clock = new FakeClock(0);
  const bucket = new TokenBucket({ qps: 1, burst: 1, clock });
  assert.equal(drain(bucket), 1);
  let steps = 0;
  do {
    clock.advance(0.0005);
    steps++;
  } while (!bucket.tryTake() && steps < 3_000_000);
  assert.ok(steps > 1_990_000 && steps < 2_010_000, `one token after ${steps} steps`);
});

Deno.test("TokenBucket refills nothing when the clock steps back", () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 100, burst: 10, clock });
  drain(bucket);
  clock.set(clock.now() - 60_000);
  assert.equal(bucket.tryTake(), false);
  clock.advance(10); // counted from the new time
  assert.equal(drain(bucket), 1);
});

Deno.test("TokenBucket refills from the last call, not from creation", () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ qps: 100, burst: 2, clock });
  clock.advance(5000); // full bucket: nothing to add
  assert.equal(drain(bucket), 2);
  clock.advance(10);
  assert.equal(drain(bucket), 1);
});

Deno.test("TokenBucket rejects invalid options", async (t) => {
  const cases: { name: string; qps: number; burst: number; message: RegExp }[] = [
    { name: "qps 0", qps: 0, burst: 1, message: /qps "0"/ },
    { name: "negative qps", qps: -1, burst: 1, message: /qps "-1"/ },
    { name: "NaN qps", qps: Number.NaN, burst: 1, message: /qps "NaN"/ },
    { name: "infinite qps", qps: Infinity, burst: 1, message: /qps "Infinity"/ },
    { name: "qps as a string", qps: "100" as unknown as number, burst: 1, message: /qps "100"/ },
    { name: "burst 0", qps: 1, burst: 0, message: /burst "0"/ },
    { name: "fractional burst", qps: 1, burst: 1.5, message: /burst "1.5"/ },
    { name: "NaN burst", qps: 1, burst: Number.NaN, message: /burst "NaN"/ },
    { name: "infinite burst", qps: 1, burst: Infinity, message: /burst "Infinity"/ },
    {
      name: "burst too large for exact units",
      qps: 1,
      burst: 1e10,
      message: /burst "10000000000"/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(
        () => new TokenBucket({ qps: c.qps, burst: c.burst, clock: new FakeClock() }),
        (err) => {
          assert.ok(err instanceof RangeError);
          assert.match(err.message, /^Cannot create token bucket: /);
          assert.match(err.message, c.message);
          return true;
        },
      );
    });
  }
});

Deno.test("TokenBucket exposes its settings", () => {
  const bucket = new TokenBucket({ qps: 2.5, burst: 3, clock: new FakeClock() });
  assert.equal(bucket.qps, 2.5);
  assert.equal(bucket.burst, 3);
});
