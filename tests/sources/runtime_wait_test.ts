import assert from "node:assert/strict";
import { createLogger } from "../../src/log.ts";
import { FakeClock } from "../../src/clock.ts";
import {
  RUNTIME_WAIT_INITIAL_DELAY_MS,
  RUNTIME_WAIT_MAX_DELAY_MS,
  runtimeWaitReason,
  type RuntimeWaitStatus,
  waitForRuntime,
} from "../../src/sources/runtime_wait.ts";

class Unavailable extends Error {}

/** A runtime that answers from `upAt` (fake clock ms) on; records each attempt's time. */
function runtimeUpAt(clock: FakeClock, upAt: number) {
  const attempts: number[] = [];
  return {
    attempts,
    connect: () => {
      attempts.push(clock.now());
      return clock.now() >= upAt
        ? Promise.resolve("containerd")
        : Promise.reject(new Unavailable(`nothing at the socket (${attempts.length})`));
    },
  };
}

function fixture(limitMs: number) {
  const clock = new FakeClock(0);
  const lines: string[] = [];
  const sleeps: number[] = [];
  const statuses: RuntimeWaitStatus[] = [];
  const options = {
    limitMs,
    clock,
    log: createLogger({ level: "debug", write: (l) => lines.push(l) }),
    sleep: (ms: number) => {
      sleeps.push(ms);
      clock.advance(ms);
      return Promise.resolve();
    },
    onWaiting: (s: RuntimeWaitStatus) => statuses.push(s),
  };
  return { clock, lines, sleeps, statuses, options };
}

const retryable = (e: unknown) => e instanceof Unavailable;

Deno.test("waitForRuntime() backs off 250 ms doubling, capped at 5 s, until the runtime answers", async () => {
  const f = fixture(5 * 60_000);
  const runtime = runtimeUpAt(f.clock, 20_000);
  assert.equal(await waitForRuntime(runtime.connect, retryable, f.options), "containerd");
  assert.equal(f.sleeps[0], RUNTIME_WAIT_INITIAL_DELAY_MS);
  assert.deepEqual(f.sleeps.slice(0, 6), [250, 500, 1000, 2000, 4000, 5000]);
  assert.ok(f.sleeps.every((ms) => ms <= RUNTIME_WAIT_MAX_DELAY_MS));
  // Found by the first attempt after it came up: at most one capped pause late.
  assert.ok(runtime.attempts.at(-1)! - 20_000 <= RUNTIME_WAIT_MAX_DELAY_MS);
  assert.equal(f.statuses.length, runtime.attempts.length - 1);
  assert.equal(f.lines.filter((l) => l.includes('"level":"warn"')).length, 1, "warns once");
  assert.ok(f.lines.at(-1)!.includes("container runtime answered"));
});

Deno.test("waitForRuntime() gives up with the last error once the limit has passed", async () => {
  const f = fixture(30_000);
  const runtime = runtimeUpAt(f.clock, Infinity);
  await assert.rejects(
    waitForRuntime(runtime.connect, retryable, f.options),
    (err) =>
      err instanceof Unavailable &&
      err.message === `nothing at the socket (${runtime.attempts.length})`,
  );
  // The last pause is cut to the limit: one attempt at the limit, none after.
  assert.equal(runtime.attempts.at(-1), 30_000);
  assert.equal(f.sleeps.reduce((a, b) => a + b, 0), 30_000);
});

Deno.test("waitForRuntime() with a 0 limit tries once", async () => {
  const f = fixture(0);
  const runtime = runtimeUpAt(f.clock, Infinity);
  await assert.rejects(waitForRuntime(runtime.connect, retryable, f.options), Unavailable);
  assert.equal(runtime.attempts.length, 1);
  assert.deepEqual(f.sleeps, []);
});

Deno.test("waitForRuntime() does not retry errors waiting cannot fix", async () => {
  const f = fixture(60_000);
  let calls = 0;
  const denied = () => {
    calls++;
    return Promise.reject(new TypeError("not permitted"));
  };
  await assert.rejects(waitForRuntime(denied, retryable, f.options), TypeError);
  assert.equal(calls, 1);
});

Deno.test("waitForRuntime() stops when its signal aborts", async () => {
  const f = fixture(60_000);
  const stop = new AbortController();
  const runtime = runtimeUpAt(f.clock, Infinity);
  const sleep = f.options.sleep;
  const options = {
    ...f.options,
    signal: stop.signal,
    sleep: (ms: number) => {
      if (f.sleeps.length === 2) stop.abort(new Error("shutting down"));
      return sleep(ms);
    },
  };
  await assert.rejects(waitForRuntime(runtime.connect, retryable, options), /shutting down/);
  assert.equal(runtime.attempts.length, 3);
});

Deno.test("runtimeWaitReason() says what it waits for, how long, and the last error", () => {
  assert.equal(
    runtimeWaitReason({
      attempts: 4,
      lastError: "connect ENOENT",
      waitedMs: 3_750,
      limitMs: 300_000,
    }),
    "waiting for the container runtime (attempt 4, 4s of --runtime-wait-timeout=300s): connect ENOENT",
  );
});
