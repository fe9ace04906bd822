/** Cost of one rate-limit decision, with the system clock and a fake one. */

import { systemClock } from "../src/clock.ts";
import { TokenBucket } from "../src/ratelimit/mod.ts";

let fakeNow = 0;
const FAKE_CLOCK = { ...systemClock, now: () => fakeNow };
// Refills on every call: 1 ms per call at 1000 qps.
const REFILLING = new TokenBucket({ qps: 1000, burst: 10, clock: FAKE_CLOCK });
// Always empty after the first calls: the rejection path.
const EMPTY = new TokenBucket({ qps: 1e-9, burst: 1, clock: FAKE_CLOCK });
const SYSTEM = new TokenBucket({ qps: 100, burst: 10, clock: systemClock });

Deno.bench({
  group: "tryTake",
  name: "fake clock, refilled each call",
  baseline: true,
  fn() {
    fakeNow += 1;
    REFILLING.tryTake();
  },
});
Deno.bench({
  group: "tryTake",
  name: "fake clock, empty bucket",
  fn() {
    EMPTY.tryTake();
  },
});
Deno.bench({
  group: "tryTake",
  name: "system clock",
  fn() {
    SYSTEM.tryTake();
  },
});
