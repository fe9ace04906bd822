// `pods-api simulate-runtime` in a process of its own, read by the daemon through its real CRI source.
import assert from "node:assert/strict";
import { PodsClient } from "../../src/client/mod.ts";
import { systemClock } from "../../src/clock.ts";
import { parseServeConfig } from "../../src/config.ts";
import { startDaemon } from "../../src/daemon.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import type { SimulatedNode } from "../../src/sim/mod.ts";
import {
  parseSimulateRuntimeFlags,
  runSimulateRuntime,
} from "../../src/sim/simulate_runtime_command.ts";
import { createSources } from "../../src/sources/create.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const PERMS = ["--allow-read", "--allow-write", "--allow-net", "--allow-env", "--allow-sys"];

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return text.split("\n")[0]!;
}

Deno.test("simulate-runtime flags: defaults from the serve flags, bad values refused", () => {
  const parsed = parseSimulateRuntimeFlags(["--socket", "/tmp/x.sock"]);
  assert.notEqual(parsed, "help");
  if (parsed === "help") return;
  assert.equal(parsed.pods, 30);
  assert.equal(parsed.churn, 1);
  assert.equal(parsed.syncPeriodMs, 100);
  assert.equal(parseSimulateRuntimeFlags(["--help"]), "help");
  assert.throws(() => parseSimulateRuntimeFlags(["--socket", "rel.sock"]), /absolute/);
  assert.throws(() => parseSimulateRuntimeFlags(["--socket", "/a", "--pods", "-1"]), /--pods/);
  assert.throws(() => parseSimulateRuntimeFlags(["--socket", "/a", "--pods", "1.5"]), /whole/);
  assert.throws(() => parseSimulateRuntimeFlags(["--socket", "/a", "--churn", "x"]), /--churn/);
  assert.throws(() => parseSimulateRuntimeFlags(["--socket", "/a", "--bogus"]), /bogus/);
});

Deno.test("the daemon pointed at a simulate-runtime process serves its pods", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-simrt-" });
  const runtimeSocket = `${dir}/sim-cri.sock`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      ...PERMS,
      MAIN,
      "simulate-runtime",
      "--socket",
      runtimeSocket,
      "--pods",
      "17",
      "--churn",
      "0",
      "--log-level",
      "warn",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const ready = JSON.parse(await firstLine(child.stdout));
    assert.deepEqual(ready, { endpoint: `unix://${runtimeSocket}`, pods: 17 });
    const config = parseServeConfig([
      "--container-runtime-endpoint",
      ready.endpoint,
      "--socket",
      `${dir}/api/pods-api.sock`,
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--hostname-override",
      "sim-node-1",
      "--runtime-wait-timeout",
      "0s",
      // The runtime alone: no kubelet Pods API source, no compatibility socket.
      "--kubelet-pods-api-endpoint=none",
      "--kubelet-compat-socket=",
    ]);
    const registry = createMetricsRegistry();
    const deps = { log: silentLogger, clock: systemClock, metrics: registry.metrics };
    await using created = await createSources(config, deps);
    assert.deepEqual(created.names, ["cri"]);
    // Simulated data never passes for a real runtime's.
    assert.match(created.runtime, /^pods-api-simulated /);
    await using daemon = await startDaemon(config, {
      log: silentLogger,
      clock: systemClock,
      sources: created.sources,
      registry,
      runLoops: false,
    });
    assert.equal(await daemon.relistOnce(), true);
    using client = new PodsClient({ socket: daemon.socketPath });
    const pods = await client.listPods();
    assert.equal(pods.length, 17);
    for (const pod of pods) {
      assert.equal(pod.spec?.nodeName, "sim-node-1");
      const statuses = pod.status?.containerStatuses;
      assert.ok(Array.isArray(statuses) && statuses.length > 0, pod.metadata?.name);
    }
  } finally {
    child.kill("SIGTERM");
    const status = await child.status;
    assert.equal(status.code, 0, "simulate-runtime stops cleanly on SIGTERM");
    // It removed its socket on the way out.
    await assert.rejects(Deno.lstat(runtimeSocket), Deno.errors.NotFound);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runSimulateRuntime() shows the node it serves to observe(), then serves until stopped", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-simrt-" });
  try {
    const options = parseSimulateRuntimeFlags(["--socket", `${dir}/sim.sock`, "--pods", "5"]);
    assert.ok(options !== "help");
    const stop = new AbortController();
    const lines: string[] = [];
    let observed: SimulatedNode | undefined;
    const running = runSimulateRuntime(options, {
      clock: systemClock,
      log: silentLogger,
      signal: stop.signal,
      out: (line) => {
        lines.push(line);
        stop.abort();
      },
      observe: (node) => {
        // Before it is served: nothing printed yet.
        assert.deepEqual(lines, []);
        observed = node;
      },
    });
    await running;
    assert.equal(observed?.pods().length, 5);
    assert.deepEqual(JSON.parse(lines[0]!), { endpoint: `unix://${dir}/sim.sock`, pods: 5 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
