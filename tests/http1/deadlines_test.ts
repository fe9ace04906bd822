// The deadline sweep: a deadline never fires early and less than two ticks late,
// re-arming replaces it, and the sweep's timer runs only while one is armed.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { DeadlineSweep, tickFor } from "../../src/http1/deadlines.ts";

function expiring(log: string[], name: string) {
  return { expire: () => log.push(name) };
}

Deno.test("tickFor() is a tenth of the shortest deadline, from 5 ms to 1 s", () => {
  assert.equal(tickFor(10_000), 1000);
  assert.equal(tickFor(90_000), 1000);
  assert.equal(tickFor(1000), 100);
  assert.equal(tickFor(1), 5);
});

Deno.test("DeadlineSweep: never early, less than two ticks late, and re-arming replaces", () => {
  const clock = new FakeClock();
  const sweep = new DeadlineSweep(clock, 100);
  const log: string[] = [];
  const a = expiring(log, "a");
  const b = expiring(log, "b");
  clock.advance(40); // armed between two sweeps
  sweep.arm(a, 250);
  sweep.arm(b, 1000);
  clock.advance(249);
  assert.deepEqual(log, [], "not before 250 ms");
  clock.advance(200);
  assert.deepEqual(log, ["a"], "less than two ticks after");
  sweep.arm(b, 50); // replaces b's 1 s
  clock.advance(250);
  assert.deepEqual(log, ["a", "b"]);
  assert.equal(clock.pendingTimers, 0, "no timer once nothing is armed");
  sweep.arm(a, 100);
  sweep.disarm(a);
  clock.advance(10_000);
  assert.deepEqual(log, ["a", "b"], "a disarmed deadline never fires");
  sweep.arm(a, Infinity);
  sweep.stop();
  assert.equal(clock.pendingTimers, 0);
});
