// `--relist-min-interval` reaches every source's relister: the daemon logs
// the spacing each source ends up with when the flag asks for more than half
// that source's period.
import assert from "node:assert/strict";
import { createLogger } from "../src/log.ts";
import { startHarness } from "./_support/daemon_harness.ts";

/** The fields of the daemon's "clamped" log lines when started with `flags`. */
async function clampLines(flags: string[]): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ write: (line) => lines.push(JSON.parse(line)) });
  await (await startHarness({ flags, log }))[Symbol.asyncDispose]();
  return lines.filter((l) => String(l["msg"]).includes("min interval clamped"));
}

Deno.test("the daemon passes --relist-min-interval to its relisters, clamped to half the period", async () => {
  const [line, ...more] = await clampLines(["--relist-period", "40ms"]);
  assert.equal(more.length, 0);
  assert.equal(line?.["source"], "fake");
  assert.equal(line?.["minInterval"], 100, "the default");
  assert.equal(line?.["clampedTo"], 20);
  const [given] = await clampLines(["--relist-period", "1s", "--relist-min-interval", "700ms"]);
  assert.equal(given?.["minInterval"], 700);
  assert.equal(given?.["clampedTo"], 500);
  assert.deepEqual(await clampLines(["--relist-period", "1s"]), [], "100 ms fits a 1 s period");
});
