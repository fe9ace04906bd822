/**
 * A node whose container runtime comes up late: `pods-api serve`, started
 * with the systemd unit's own flags (deploy/pods-api.service; only paths
 * moved to a temporary directory), waits for a runtime socket that appears
 * 20 s after it started. Meanwhile it stays alive, `/healthz` answers ok and
 * `/readyz` says it waits for the runtime; once the socket appears it serves
 * the runtime's pods; and with a short `--runtime-wait-timeout` it exits 3,
 * the code the unit restarts. Real time passes here (20 s and more); nothing
 * asserts on how long anything took.
 *
 * @module
 */

import assert from "node:assert/strict";
import { EXIT } from "../../main.ts";
import { silentLogger } from "../../src/log.ts";
import { SimulatedNode, startSimulatedRuntime } from "../../src/sim/mod.ts";
import { systemClock } from "../../src/clock.ts";
import { poll } from "../_support/poll.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const UNIT = await Deno.readTextFile(new URL("../../deploy/pods-api.service", import.meta.url));
const DECODER = new TextDecoder();
/** How late the runtime comes (the slow boot). */
const LATE_MS = 20_000;
/** Bound of every wait: generous for a loaded machine. */
const DEADLINE_MS = 120_000;

/** The unit's `serve` flags. */
function unitServeFlags(): string[] {
  const joined = UNIT.replace(/\\\n/g, " ");
  const words = (/^ExecStart=(.*)$/m.exec(joined)?.[1] ?? "").trim().split(/\s+/);
  assert.deepEqual(words.slice(0, 2), ["/usr/local/bin/pods-api", "serve"]);
  // Without the drop-ins' variables ($PODS_API_ARGS...), empty here.
  return words.slice(2).filter((w) => !w.startsWith("$"));
}

/** The unit's flags with the node's paths moved under `dir` and the runtime named. */
function serveArgs(dir: string, runtimeSocket: string, extra: string[] = []): string[] {
  const moved: Record<string, string> = {
    "--socket": `${dir}/api/pods-api.sock`,
    "--metrics-bind-address": "127.0.0.1:0",
    "--pod-manifest-path": `${dir}/manifests`,
  };
  const flags = unitServeFlags().map((f) => {
    const name = f.split("=")[0]!;
    return name in moved ? `${name}=${moved[name]}` : f;
  });
  return [
    "serve",
    ...flags,
    `--container-runtime-endpoint=unix://${runtimeSocket}`,
    "--hostname-override=late-node",
    // Never the kubelet's path on the machine the tests run on.
    "--kubelet-compat-socket=",
    ...extra,
  ];
}

interface LogLine {
  msg?: string;
  level?: string;
  address?: string;
  metrics?: string;
  runtime?: string;
  [key: string]: unknown;
}

/** Runs `main.ts` and collects its JSON log lines. */
function startServe(args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      "--allow-read",
      "--allow-write",
      "--allow-net",
      "--allow-env",
      "--allow-sys",
      MAIN,
      ...args,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const done = (async () => {
    let buffer = "";
    for await (const chunk of child.stderr) {
      buffer += DECODER.decode(chunk, { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) !== -1) {
        const text = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        raw.push(text);
        try {
          lines.push(JSON.parse(text));
        } catch {
          // Not a log line.
        }
      }
    }
  })();
  let exited: Deno.CommandStatus | undefined;
  const status = child.status.then((s) => (exited = s));
  return {
    child,
    lines,
    raw,
    done,
    status,
    exited: () => exited,
    async waitFor(match: (l: LogLine) => boolean): Promise<LogLine> {
      try {
        return await poll(() => {
          const found = lines.find(match);
          if (found === undefined && exited) {
            throw new Error(`serve exited (${exited.code}) first:\n${raw.join("\n")}`);
          }
          return found;
        }, { what: "a log line", timeoutMs: DEADLINE_MS, intervalMs: 50 });
      } catch (err) {
        if (exited) throw err;
        throw new Error(`No such log line:\n${raw.join("\n")}`);
      }
    },
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

Deno.test({
  name: "serve with the unit's flags waits for a runtime socket that appears 20 s late",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-late-" });
    await Deno.mkdir(`${dir}/manifests`);
    await Deno.mkdir(`${dir}/run`);
    const runtimeSocket = `${dir}/run/containerd.sock`;
    const serve = startServe(serveArgs(dir, runtimeSocket));
    const startedAt = Date.now();
    const stopRuntime = new AbortController();
    let runtime: Awaited<ReturnType<typeof startSimulatedRuntime>> | undefined;
    try {
      const probe = await serve.waitFor((l) => l.msg === "serving /readyz while starting");
      const base = `http://${probe.address}`;

      await t.step("while the runtime is missing: alive, not ready, and says why", async () => {
        assert.deepEqual(await get(`${base}/healthz`), { status: 200, body: "ok\n" });
        const ready = await get(`${base}/readyz`);
        assert.equal(ready.status, 503);
        assert.match(ready.body, /waiting for the container runtime \(attempt \d+/);
        assert.match(ready.body, /--runtime-wait-timeout=300s/);
        assert.ok(
          serve.lines.some((l) =>
            l.level === "warn" && l.msg === "waiting for the container runtime"
          ),
        );
      });

      await pause(Math.max(0, LATE_MS - (Date.now() - startedAt)));
      await t.step("20 s later it is still running and still waiting", async () => {
        assert.equal(serve.exited(), undefined, serve.raw.join("\n"));
        const ready = await get(`${base}/readyz`);
        assert.equal(ready.status, 503);
        assert.match(ready.body, /waiting for the container runtime/);
      });

      const node = new SimulatedNode({
        clock: systemClock,
        nodeName: "late-node",
        pods: 5,
        churnPerSecond: 0,
      });
      runtime = await startSimulatedRuntime({
        node,
        socketPath: runtimeSocket,
        signal: stopRuntime.signal,
        runtimeName: "containerd",
        log: silentLogger,
      });

      await t.step("once the socket appears it starts and turns ready", async () => {
        const started = await serve.waitFor((l) => l.msg === "pods-api started");
        assert.match(String(started.runtime), /^containerd .* at unix:\/\//);
        assert.ok(serve.lines.some((l) => l.msg === "container runtime answered"));
        // A :0 address keeps the port it had while waiting.
        assert.equal(started.metrics, probe.address);
        const ready = await poll(async () => {
          const r = await get(`${base}/readyz`);
          return r.status === 200 ? r : undefined;
        }, { what: "/readyz ok", timeoutMs: DEADLINE_MS, intervalMs: 100 });
        assert.deepEqual(ready, { status: 200, body: "ok\n" });
        const metrics = await get(`${base}/metrics`);
        assert.match(metrics.body, /^pods_api_cache_pods 5$/m);
      });

      await t.step("SIGTERM stops it with exit code 0", async () => {
        serve.child.kill("SIGTERM");
        const status = await serve.status;
        assert.equal(status.code, EXIT.ok, serve.raw.join("\n"));
      });
    } finally {
      if (serve.exited() === undefined) serve.child.kill("SIGKILL");
      await serve.status;
      await serve.done;
      stopRuntime.abort();
      await runtime?.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "serve exits 3 only after --runtime-wait-timeout, and 0 when stopped while waiting",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-late-" });
    await Deno.mkdir(`${dir}/manifests`);
    const missing = `${dir}/run/containerd.sock`;
    try {
      await t.step("the limit passes: exit 3 with the reason", async () => {
        const serve = startServe(serveArgs(dir, missing, ["--runtime-wait-timeout=2s"]));
        const status = await serve.status;
        await serve.done;
        assert.equal(status.code, EXIT.noRuntime, serve.raw.join("\n"));
        const waits = serve.lines.filter((l) => /runtime/.test(String(l.msg)));
        assert.ok(waits.length >= 1, serve.raw.join("\n"));
        const failed = serve.lines.find((l) => l.msg === "pods-api failed");
        assert.match(
          JSON.stringify(failed),
          new RegExp(`No container runtime answers at .*${missing}`),
        );
      });

      await t.step("SIGTERM while waiting: a clean stop", async () => {
        const serve = startServe(serveArgs(dir, missing));
        await serve.waitFor((l) => l.msg === "serving /readyz while starting");
        serve.child.kill("SIGTERM");
        const status = await serve.status;
        await serve.done;
        assert.equal(status.code, EXIT.ok, serve.raw.join("\n"));
        assert.ok(serve.lines.some((l) => l.msg === "stopped"));
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
