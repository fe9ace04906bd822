/**
 * What N node agents cost the API server (DESIGN.md §17, issue 21): each agent
 * watching the API server itself (`list` + `watch` with
 * `fieldSelector=spec.nodeName=<node>`, as k8sattributes, Vector or Falco
 * do) against the same N agents reading pods-api's HTTP API while pods-api
 * alone watches the API server. The API server is the test fake
 * (`tests/_support/fake_apiserver.ts`), which counts the requests it
 * answers and the bytes it sends; the node has `PODS` realistic pods (the
 * full-pod fixture, ~19 KB each), and `CHANGES` of them change once while
 * every agent watches. Each run ends when every agent has seen every change.
 *
 * `deno task bench:apiserver` (or `deno run --frozen -A bench/apiserver_fanout_run.ts`)
 *
 * @module
 */

import { systemClock } from "../src/clock.ts";
import { parseServeConfig } from "../src/config.ts";
import { startDaemon } from "../src/daemon.ts";
import { silentLogger } from "../src/log.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";
import type { PodObject } from "../src/model/pod.ts";
import { ApiServerPodSource } from "../src/sources/apiserver/mod.ts";
import { type FakeApiServer, startFakeApiServer } from "../tests/_support/fake_apiserver.ts";

const PODS = 110;
const CHANGES = 100;
const AGENT_COUNTS = [1, 5, 10, 20];
const NODE = "node-1";
const FIXTURE: PodObject = JSON.parse(
  await Deno.readTextFile(new URL("../tests/_fixtures/full_pod.json", import.meta.url)),
);

function pod(i: number, generation: number): PodObject {
  const p = structuredClone(FIXTURE);
  p.metadata = {
    ...p.metadata,
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    name: `web-${i}`,
    labels: { ...p.metadata.labels, "bench/generation": String(generation) },
  };
  p.spec = { ...p.spec, nodeName: NODE };
  return p;
}

/** A node agent: list, then watch from the list's version, until it has seen every change. */
async function agent(base: string, done: AbortSignal): Promise<void> {
  const selector = `fieldSelector=${encodeURIComponent(`spec.nodeName=${NODE}`)}`;
  const list = await (await fetch(`${base}/api/v1/pods?${selector}`)).json() as {
    metadata: { resourceVersion: string };
    items: PodObject[];
  };
  const generation = new Map<string, string>();
  const see = (p: PodObject) =>
    generation.set(p.metadata.uid, p.metadata.labels?.["bench/generation"] ?? "");
  list.items.forEach(see);
  const changed = () => [...generation.values()].filter((g) => g === "1").length;
  if (changed() >= CHANGES) return;
  const res = await fetch(
    `${base}/api/v1/pods?${selector}&watch=true&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`,
    { signal: done },
  );
  let text = "";
  for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
    text += chunk;
    let at: number;
    while ((at = text.indexOf("\n")) >= 0) {
      const event = JSON.parse(text.slice(0, at)) as { type: string; object: PodObject };
      text = text.slice(at + 1);
      if (event.type === "ADDED" || event.type === "MODIFIED") see(event.object);
    }
    if (changed() >= CHANGES) break;
  }
  await res.body?.cancel().catch(() => {});
}

interface Cost {
  readonly requests: number;
  readonly bytes: number;
}

async function churn(fake: FakeApiServer): Promise<void> {
  for (let i = 0; i < CHANGES; i++) fake.put(pod(i, 1));
  await Promise.resolve();
}

/** N agents on the API server itself. */
async function direct(n: number): Promise<Cost> {
  await using fake = await startFakeApiServer({
    pods: Array.from({ length: PODS }, (_, i) => pod(i, 0)),
  });
  const done = new AbortController();
  const agents = Array.from({ length: n }, () => agent(fake.url, done.signal));
  await fake.waitForWatches(n);
  await churn(fake);
  await Promise.all(agents);
  done.abort();
  return { requests: fake.requests.length, bytes: fake.bytesSent };
}

/** N agents on pods-api, which alone watches the API server. */
async function viaPodsApi(n: number): Promise<Cost> {
  await using fake = await startFakeApiServer({
    pods: Array.from({ length: PODS }, (_, i) => pod(i, 0)),
  });
  const dir = await Deno.makeTempDir({ prefix: "pods-api-bench-" });
  const registry = createMetricsRegistry();
  const source = new ApiServerPodSource({
    connection: { server: fake.url, origin: "bench" },
    nodeName: NODE,
    clock: systemClock,
    log: silentLogger,
    metrics: registry.metrics,
  });
  const config = parseServeConfig([
    "--socket",
    `${dir}/pods-api.sock`,
    "--kubelet-compat-socket=",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--http-bind-address",
    "127.0.0.1:0",
    "--hostname-override",
    NODE,
  ]);
  const daemon = await startDaemon(config, {
    log: silentLogger,
    clock: systemClock,
    sources: [source],
    registry,
  });
  try {
    await daemon.gate.waitOpen(AbortSignal.timeout(30_000));
    const base = `http://127.0.0.1:${daemon.httpApi!.port}`;
    const done = new AbortController();
    const agents = Array.from({ length: n }, () => agent(base, done.signal));
    await waitFor(async () => (await httpWatches(daemon.metricsPort)) >= n);
    await churn(fake);
    await Promise.all(agents);
    done.abort();
    return { requests: fake.requests.length, bytes: fake.bytesSent };
  } finally {
    await daemon.close();
    await source.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

async function httpWatches(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split("\n").find((l) =>
    l.startsWith('pods_api_http_requests_total{verb="watch"')
  );
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("the benchmark did not settle");
}

const rows: string[] = [];
for (const n of AGENT_COUNTS) {
  const a = await direct(n);
  const b = await viaPodsApi(n);
  const mib = (x: number) => (x / 1048576).toFixed(2);
  rows.push(
    `| ${n} | ${a.requests} | ${mib(a.bytes)} | ${b.requests} | ${mib(b.bytes)} | ${
      (a.requests / b.requests).toFixed(1)
    }x | ${(a.bytes / b.bytes).toFixed(1)}x |`,
  );
}
// deno-lint-ignore no-console
console.log(
  [
    `${PODS} pods on the node (~${
      Math.round(JSON.stringify(FIXTURE).length / 1000)
    } KB each), ${CHANGES} changed once, every agent lists then watches until it has seen them all`,
    "",
    "| agents | direct: requests | direct: MiB sent | via pods-api: requests | via pods-api: MiB sent | requests saved | bytes saved |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n"),
);
