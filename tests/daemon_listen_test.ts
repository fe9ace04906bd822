// A daemon that cannot bind an address says which address and which flag,
// not Deno's bare "AddrInUse: Address already in use (os error 98)".
import assert from "node:assert/strict";
import { parseServeConfig } from "../src/config.ts";
import { startDaemon } from "../src/daemon.ts";
import { silentLogger } from "../src/log.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import { FakePodSource } from "../src/sources/fake/mod.ts";
import { FakeClock } from "../src/clock.ts";

async function startOn(flags: string[]): Promise<unknown> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-listen-" });
  try {
    const config = parseServeConfig([
      "--socket",
      `${dir}/api/pods-api.sock`,
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--hostname-override",
      "test-node",
      ...flags,
    ]);
    const daemon = await startDaemon(config, {
      log: silentLogger,
      clock: new FakeClock(),
      sources: [new FakePodSource()],
      registry: createMetricsRegistry(),
      runLoops: false,
    });
    await daemon.close();
    return undefined;
  } catch (err) {
    return err;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const flag of ["metrics-bind-address", "http-bind-address"]) {
  Deno.test(`an address in use names --${flag} and the address`, async () => {
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const address = `127.0.0.1:${taken.addr.port}`;
    const err = await startOn([`--${flag}`, address]);
    assert.ok(err instanceof Error, "the start fails");
    assert.equal(err.message, `Cannot listen on ${address} (--${flag}): address already in use`);
    assert.ok(err.cause instanceof Deno.errors.AddrInUse);
  });
}
