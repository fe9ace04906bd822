// No local client can end the daemon through a TCP listener (issue 36): the
// daemon runs as a process of its own under the unit's LimitNOFILE=8192.
// - 10 000 idle connections to each of the HTTP API and the metrics port at
//   once: the daemon lives, its descriptors stay within the caps, the pods
//   keep changing on a gRPC watch (relists go on), ListPods answers, and each
//   listener answers a fresh request once the flood is over;
// - a slowloris client is cut at the header deadline, and a client that
//   never starts TLS at the handshake deadline (the two deadlines set to 1 s;
//   the test waits for the cut, it does not time it).
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { fileURLToPath } from "node:url";
import { exists, type PeerRequirement, requirePeer } from "../_support/peers.ts";
import { removeTree } from "../_support/remove_tree.ts";
import { processUsage, startServeChild } from "./_child.ts";
import { poll } from "../_support/poll.ts";
import { rawClient, rawUnary, rawWatch, report } from "./_support.ts";

const FLOOD = fileURLToPath(new URL("./_tcp_flood.py", import.meta.url));
const PYTHON = "/usr/bin/python3";
const LIMIT = 8192;
const CONNECTIONS = 10_000;
const MAX_WATCHERS = 200;
/** The HTTP API's cap with these flags: --max-watchers plus 64. */
const HTTP_CAP = MAX_WATCHERS + 64;
const METRICS_CAP = 64;

/** The flood raises its own descriptor limit past 10 000, which takes root. */
const ROOT: PeerRequirement = {
  what: "root (the flood raises its descriptor limit)",
  install: "run the tests as root",
  probe: () => Deno.uid() === 0,
};
const PYTHON3: PeerRequirement = {
  what: "python3 (/usr/bin/python3)",
  install: "apt-get install python3",
  probe: () => exists(PYTHON),
};

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** The daemon under the unit's descriptor limit, with both TCP listeners on free ports. */
async function startListening(flags: string[]) {
  const metricsPort = freePort();
  const httpPort = freePort();
  const d = await startServeChild([
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    `--http-bind-address=127.0.0.1:${httpPort}`,
    ...flags,
  ], { maxOpenFiles: LIMIT });
  return { d, metricsPort, httpPort };
}

/** A flood of idle connections from a process of its own (so the test's descriptors are not spent). */
async function flood(port: number, count: number) {
  const child = new Deno.Command(PYTHON, {
    args: [FLOOD, "127.0.0.1", String(port), String(count)],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<Record<string, number>> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) {
        const err = new TextDecoder().decode((await child.output().catch(() => undefined))?.stderr);
        throw new Error(`the flood ended early: ${err}`);
      }
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return JSON.parse(line);
  };
  const opened = await nextLine();
  return {
    opened,
    async release() {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("close\n"));
      await writer.close();
      const closed = await nextLine();
      await lines.cancel();
      await child.stderr.cancel();
      await child.status;
      return closed;
    },
  };
}

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(res.status, 200);
  return await res.text();
}

function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) {
      sum += Number(m[3]);
    }
  }
  return sum;
}

const gate = requirePeer(ROOT, PYTHON3);

Deno.test({
  name: gate.name(
    "10 000 idle connections to each TCP listener under LimitNOFILE=8192: the daemon lives, relists go on, ListPods answers, both answer after",
  ),
  ignore: gate.ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    gate.check();
    const { d, metricsPort, httpPort } = await startListening([
      `--max-watchers=${MAX_WATCHERS}`,
      "--simulate-churn=20",
    ]);
    await using _daemon = d;
    await d.explain(async () => {
      const before = await scrape(metricsPort);
      const base = await processUsage(d.pid);
      const stub = rawClient(d.socket);
      const watch = rawWatch(stub);
      try {
        const floods = await Promise.all([
          flood(metricsPort, CONNECTIONS),
          flood(httpPort, CONNECTIONS),
        ]);
        // While both floods hold their sockets: the pods keep changing on the watch, ListPods answers.
        const during = await processUsage(d.pid);
        const framesAtPeak = watch.frames.length;
        await watch.waitFor(framesAtPeak + 20);
        assert.ok(watch.frames.length >= framesAtPeak + 20, "changes kept reaching the watcher");
        assert.equal((await rawUnary(stub, "ListPods", new Uint8Array())).code, grpc.status.OK);
        const afterFlood = await processUsage(d.pid);
        const closed = await Promise.all(floods.map((f) => f.release()));
        // Each listener answers once the flood is over (its cap frees as the idle sockets go).
        const after = await poll(async () => {
          try {
            return await scrape(metricsPort);
          } catch {
            return undefined;
          }
        }, { what: "the metrics port to answer after the flood", timeoutMs: 30_000 });
        const api = await fetch(`http://127.0.0.1:${httpPort}/api/v1/pods`);
        assert.equal(api.status, 200);
        assert.equal((await api.json()).kind, "PodList");
        const refused = (listener: string) =>
          sample(after, "pods_api_connections_refused_total", { listener, reason: "limit" });
        const relists = (text: string) => sample(text, "pods_api_relist_duration_seconds_count");
        assert.ok(refused("metrics") > 0, "the metrics port refused past its cap");
        assert.ok(refused("http_api") > 0, "the HTTP API refused past its cap");
        assert.ok(relists(after) > relists(before), "relists went on");
        // Descriptors: at most the two caps over what the daemon held before, never the limit.
        const peak = Math.max(during.fds, afterFlood.fds);
        assert.ok(
          peak <= base.fds + HTTP_CAP + METRICS_CAP + 16,
          `${peak} descriptors, ${base.fds} before the flood`,
        );
        await report(
          "listener-flood",
          `${CONNECTIONS} idle connections to each TCP listener: ${peak} descriptors at most (${base.fds} before), ` +
            `${refused("metrics")} + ${refused("http_api")} refused past the caps, ` +
            `${watch.frames.length - framesAtPeak} watch frames during the flood, alive`,
          {
            connections: CONNECTIONS,
            metricsFlood: floods[0]!.opened,
            httpFlood: floods[1]!.opened,
            closed,
            fdsBefore: base.fds,
            fdsDuring: peak,
            rssKiBBefore: base.rssKiB,
            rssKiBDuring: Math.max(during.rssKiB, afterFlood.rssKiB),
            refusedMetrics: refused("metrics"),
            refusedHttpApi: refused("http_api"),
            acceptErrors: sample(after, "pods_api_accept_errors_total"),
            watchFramesDuringFlood: watch.frames.length - framesAtPeak,
          },
        );
      } finally {
        watch.cancel();
        stub.close();
      }
    });
  },
});

Deno.test({
  name: gate.name(
    "a slowloris client is cut at the header deadline, a client that never starts TLS at the handshake deadline",
  ),
  ignore: gate.ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    gate.check();
    const tokenDir = await Deno.makeTempDir();
    await Deno.writeTextFile(`${tokenDir}/token`, "secret-token\n");
    const { d, metricsPort, httpPort } = await startListening([
      `--http-token-file=${tokenDir}/token`,
      `--http-cert-dir=${tokenDir}/pki`,
      "--http-read-header-timeout=1s",
      "--http-tls-handshake-timeout=1s",
    ]);
    await using _daemon = d;
    try {
      await d.explain(async () => {
        // Slowloris on the metrics port: a header byte every 300 ms, never the blank line.
        const slow = await Deno.connect({ hostname: "127.0.0.1", port: metricsPort });
        const started = performance.now();
        await slow.write(new TextEncoder().encode("GET /metrics HTTP/1.1\r\n"));
        let cut = false;
        for (let i = 0; i < 200 && !cut; i++) {
          await new Promise((resolve) => setTimeout(resolve, 300));
          cut = await slow.write(new TextEncoder().encode("X")).then(() => false, () => true);
          if (!cut) {
            // A closed peer shows on read as the end of the stream.
            const probe = await Promise.race([
              slow.read(new Uint8Array(1)),
              new Promise<"open">((resolve) => setTimeout(() => resolve("open"), 10)),
            ]);
            cut = probe === null;
          }
        }
        const slowMs = performance.now() - started;
        slow.close();
        assert.ok(cut, "the slow client was cut");
        // The cut comes at the deadline, not before (a lower bound, not a timing threshold).
        assert.ok(slowMs >= 1000, `cut after ${slowMs} ms`);

        // A TCP client to the HTTPS port that never sends a ClientHello.
        const silent = await Deno.connect({ hostname: "127.0.0.1", port: httpPort });
        const silentStart = performance.now();
        const end = await silent.read(new Uint8Array(1)).catch(() => null);
        const silentMs = performance.now() - silentStart;
        silent.close();
        assert.equal(end, null, "the silent client was cut");
        assert.ok(silentMs >= 1000, `cut after ${silentMs} ms`);

        const text = await scrape(metricsPort);
        assert.equal(
          sample(text, "pods_api_connections_timed_out_total", {
            listener: "metrics",
            deadline: "read_header",
          }),
          1,
        );
        assert.equal(
          sample(text, "pods_api_connections_timed_out_total", {
            listener: "http_api",
            deadline: "tls_handshake",
          }),
          1,
        );
        await report(
          "listener-deadlines",
          `slowloris cut after ${Math.round(slowMs)} ms, silent TLS client after ${
            Math.round(silentMs)
          } ms (deadlines 1 s)`,
          { slowlorisCutAfterMs: Math.round(slowMs), tlsSilentCutAfterMs: Math.round(silentMs) },
        );
      });
    } finally {
      removeTree(tokenDir);
    }
  },
});
