// While the API server is unreachable the daemon keeps serving the pods it
// has, and /readyz says that the API server source is stale, and why.
import assert from "node:assert/strict";
import { FakeClock } from "../../../src/clock.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import { makePod } from "../../_fixtures/pods.ts";
import { startHarness } from "../../_support/daemon_harness.ts";
import { poll } from "../../_support/poll.ts";
import { startFakeApiServer } from "../../_support/fake_apiserver.ts";
import { sourceOn } from "./_harness.ts";

Deno.test("/readyz names the API server source once it is stale, and the pods stay served", async () => {
  const fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  const server = fake.url;
  const clock = new FakeClock();
  const registry = createMetricsRegistry();
  await using source = sourceOn({ server }, { metrics: registry.metrics });
  await using h = await startHarness({
    sources: [source.source],
    clock,
    registry,
    flags: ["--relist-threshold", "3m"],
  });
  assert.ok(await h.daemon.relistOnce());
  assert.equal((await h.http("/readyz")).status, 200);
  await fake.waitForWatches(1);
  await fake[Symbol.asyncDispose]();
  // The watch breaks, the next one cannot connect: list() says why.
  await poll(async () => {
    source.releaseRetries();
    return (await h.daemon.relistOnce()) ? undefined : true;
  }, {
    what: "a failed read",
  });
  assert.equal((await h.http("/readyz")).status, 200, "not stale yet");
  clock.advance(3 * 60_000 + 1000);
  const ready = await h.http("/readyz");
  assert.equal(ready.status, 503);
  assert.match(ready.body, /source "apiserver" last read 181 s ago/);
  assert.match(ready.body, new RegExp(`Cannot (list|watch) pods at ${server}: cannot connect`));
  assert.deepEqual(h.daemon.cache.list().map((p) => p.uid), ["a"], "still served");
});
