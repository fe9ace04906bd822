import assert from "node:assert/strict";
import { Backoff } from "../src/backoff.ts";

Deno.test("Backoff with centered jitter moves each delay either way by at most its share", () => {
  const delays = (random: number) => {
    const backoff = new Backoff({
      initialMs: 1000,
      maxMs: 4000,
      jitter: 0.2,
      centered: true,
      random: () => random,
    });
    return [1, 2, 3, 4].map(() => backoff.next());
  };
  assert.deepEqual(delays(0.5), [1000, 2000, 4000, 4000], "the nominal delays at the middle");
  assert.deepEqual(delays(0), [800, 1600, 3200, 3200]);
  assert.deepEqual(delays(0.999999), [1200, 2400, 4800, 4800]);
});

Deno.test("Backoff without jitter gives the nominal delays", () => {
  const backoff = new Backoff({ initialMs: 250, maxMs: 1000, jitter: 0 });
  assert.deepEqual([1, 2, 3, 4].map(() => backoff.next()), [250, 500, 1000, 1000]);
});
