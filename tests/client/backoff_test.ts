import assert from "node:assert/strict";
import { Backoff } from "../../src/client/backoff.ts";

Deno.test("Backoff doubles up to its cap and jitters within the given share", () => {
  const high = new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0 });
  assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => high.next()), [100, 200, 400, 800, 1000, 1000]);
  assert.equal(high.attempts, 6);
  high.reset();
  assert.equal(high.next(), 100);
  const low = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0.5, random: () => 0.999999 });
  assert.deepEqual([1, 2, 3].map(() => low.next()), [50, 100, 200]);
});

Deno.test("Backoff spreads clients that retry at once", () => {
  const delays = new Set(Array.from({ length: 50 }, () => new Backoff({ initialMs: 1000 }).next()));
  assert.ok(delays.size > 10);
  for (const d of delays) assert.ok(d >= 500 && d <= 1000);
});

Deno.test("Backoff refuses settings that cannot back off", () => {
  assert.throws(() => new Backoff({ initialMs: 10, maxMs: 5 }), RangeError);
  assert.throws(() => new Backoff({ factor: 0.5 }), RangeError);
  assert.throws(() => new Backoff({ jitter: 2 }), RangeError);
});
