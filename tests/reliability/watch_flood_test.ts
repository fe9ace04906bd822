// A flood of watch attempts on each surface (v1alpha1.Pods, the package-less
// Pods, podsapi.v1.PodQuery, the HTTP API) against `--max-watchers`: the
// serving core admits exactly the limit across all of them together, refuses
// the rest with each surface's status (RESOURCE_EXHAUSTED; HTTP 429 with a
// Status and Retry-After), counts them, keeps serving gRPC calls, and gives
// every slot back once the watchers leave.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Metrics, Surface } from "../../src/metrics/metrics.ts";
import { encodeWatchRequest } from "../../src/proto/mod.ts";
import { makePod } from "../_fixtures/pods.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { metricValue } from "../_support/metric_value.ts";
import { podQueryServiceDefinition } from "../_support/pods_service_definition.ts";
import {
  type CallOutcome,
  pollUntil,
  rawClient,
  rawUnary,
  type RawWatch,
  rawWatch,
  recordWatch,
} from "./_support.ts";

const LIMIT = 10;
const FLOOD = 4 * LIMIT;
const TOO_MANY = "too many concurrent watch streams";

/** One watch attempt, once the daemon answered it. */
type Attempt =
  | { accepted: true; close(): Promise<void> }
  | { accepted: false; refusal: Refusal };

/** What a refused attempt got: a gRPC status, or an HTTP answer. */
type Refusal =
  | { kind: "grpc"; outcome: CallOutcome }
  | { kind: "http"; status: number; retryAfter: string | null; body: Record<string, unknown> };

interface Flood extends AsyncDisposable {
  metrics: Metrics;
  /** Opens one watch on `surface` and waits until it is accepted (first event) or refused. */
  attempt(surface: Surface): Promise<Attempt>;
  /** A ListPods on a connection of its own. */
  listPods(): Promise<CallOutcome>;
}

/** The daemon with the HTTP API on, `--max-watchers LIMIT`, synced with two pods. */
async function startFlood(): Promise<Flood> {
  const h = await startHarness({
    flags: ["--max-watchers", String(LIMIT), "--http-bind-address", "127.0.0.1:0"],
  });
  h.source.set([makePod({ uid: "u-a", name: "a" }), makePod({ uid: "u-b", name: "b" })]);
  assert.equal(await h.daemon.relistOnce(), true);
  // Every gRPC watch of a surface shares one connection, as a flooding client would.
  const alpha = rawClient(h.socket, "v1alpha1.Pods");
  const packageless = rawClient(h.socket, "Pods");
  const QueryCtor = grpc.makeGenericClientConstructor(podQueryServiceDefinition(), "PodQuery");
  const query = new QueryCtor(`unix:${h.socket}`, grpc.credentials.createInsecure()) as unknown as
    & grpc.Client
    & { Watch(req: Buffer): grpc.ClientReadableStream<Buffer> };
  const lister = rawClient(h.socket, "v1alpha1.Pods", { "grpc.use_local_subchannel_pool": 1 });
  const httpUrl = `http://127.0.0.1:${h.daemon.httpApi!.port}/api/v1/pods?watch=true`;
  const grpcAttempt = async (w: RawWatch): Promise<Attempt> => {
    await w.waitFor(1);
    if (w.frames.length > 0) {
      return {
        accepted: true,
        async close() {
          w.cancel();
          await w.ended;
        },
      };
    }
    return { accepted: false, refusal: { kind: "grpc", outcome: await w.ended } };
  };
  const httpAttempt = async (): Promise<Attempt> => {
    const client = new AbortController();
    const res = await fetch(httpUrl, { signal: client.signal });
    if (res.status !== 200) {
      return {
        accepted: false,
        refusal: {
          kind: "http",
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          body: await res.json(),
        },
      };
    }
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(first.done, false, "an accepted HTTP watch sends its pods");
    return {
      accepted: true,
      async close() {
        client.abort();
        await reader.cancel().catch(() => {});
      },
    };
  };
  return {
    metrics: h.daemon.registry.metrics,
    attempt(surface) {
      switch (surface) {
        case "v1alpha1":
          return grpcAttempt(rawWatch(alpha));
        case "v1":
          return grpcAttempt(rawWatch(packageless));
        case "podsapi_v1":
          return grpcAttempt(recordWatch(query.Watch(Buffer.from(encodeWatchRequest()))));
        case "http":
          return httpAttempt();
      }
    },
    listPods: () => rawUnary(lister, "ListPods", new Uint8Array()),
    async [Symbol.asyncDispose]() {
      for (const c of [alpha, packageless, query, lister]) c.close();
      await h[Symbol.asyncDispose]();
    },
  };
}

/** Open watches, every surface together. */
async function openWatches(metrics: Metrics): Promise<number> {
  return (await metrics.watchers.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** Checks that a refused attempt got the status its surface gives for a full pool. */
function assertTooMany(surface: Surface, attempt: Attempt): void {
  assert.equal(attempt.accepted, false);
  if (attempt.accepted) return;
  const { refusal } = attempt;
  if (surface !== "http") {
    assert.equal(refusal.kind, "grpc");
    if (refusal.kind !== "grpc") return;
    assert.deepEqual(refusal.outcome, { code: grpc.status.RESOURCE_EXHAUSTED, details: TOO_MANY });
    return;
  }
  assert.equal(refusal.kind, "http");
  if (refusal.kind !== "http") return;
  assert.equal(refusal.status, 429);
  assert.equal(refusal.retryAfter, "1");
  assert.deepEqual(refusal.body, {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: TOO_MANY,
    reason: "TooManyRequests",
    details: { retryAfterSeconds: 1 },
    code: 429,
  });
}

/** Opens `n` watches on `surface` at once; splits them by outcome. */
async function flood(f: Flood, surface: Surface, n: number) {
  const attempts = await Promise.all(Array.from({ length: n }, () => f.attempt(surface)));
  const accepted = attempts.filter((a) => a.accepted);
  const refused = attempts.filter((a) => !a.accepted);
  return { accepted, refused };
}

async function closeAll(attempts: readonly Attempt[]): Promise<void> {
  await Promise.all(attempts.map((a) => a.accepted ? a.close() : undefined));
}

const SURFACES: readonly Surface[] = ["v1alpha1", "v1", "podsapi_v1", "http"];

for (const surface of SURFACES) {
  Deno.test(`a flood of ${surface} watches gets --max-watchers slots, the rest refused, and the slots back`, async () => {
    await using f = await startFlood();
    const first = await flood(f, surface, FLOOD);
    assert.equal(first.accepted.length, LIMIT, "exactly --max-watchers watches accepted");
    assert.equal(first.refused.length, FLOOD - LIMIT);
    for (const a of first.refused) assertTooMany(surface, a);
    assert.equal(await openWatches(f.metrics), LIMIT);
    assert.equal(
      await metricValue(f.metrics.watchers, { "server_api_version": surface }),
      LIMIT,
      "the watches are counted under their surface",
    );
    assert.equal(
      await metricValue(f.metrics.refused, { surface, reason: "too_many_watchers" }),
      FLOOD - LIMIT,
      "every refusal is counted",
    );
    assert.deepEqual(await f.listPods(), { code: grpc.status.OK, details: "" });

    await closeAll(first.accepted);
    await pollUntil(async () => await openWatches(f.metrics) === 0, "every slot given back");
    const again = await flood(f, surface, LIMIT + 1);
    assert.equal(again.accepted.length, LIMIT, "the freed slots serve new watchers");
    assertTooMany(surface, again.refused[0]!);
    await closeAll(again.accepted);
    await pollUntil(async () => await openWatches(f.metrics) === 0, "every slot given back");
  });
}

Deno.test("the watch slots are one pool across the gRPC services and the HTTP API", async () => {
  await using f = await startFlood();
  const http = await flood(f, "http", 4);
  const alpha = await flood(f, "v1alpha1", 3);
  const query = await flood(f, "podsapi_v1", 3);
  for (const part of [http, alpha, query]) assert.equal(part.refused.length, 0);
  assert.equal(await openWatches(f.metrics), LIMIT);
  for (const surface of SURFACES) {
    assertTooMany(surface, await f.attempt(surface));
    assert.equal(await metricValue(f.metrics.refused, { surface, reason: "too_many_watchers" }), 1);
  }
  assert.deepEqual(await f.listPods(), { code: grpc.status.OK, details: "" });
  // The HTTP watchers leave: their slots serve the package-less gRPC service.
  await closeAll(http.accepted);
  await pollUntil(async () => await openWatches(f.metrics) === LIMIT - 4, "HTTP slots given back");
  const packageless = await flood(f, "v1", 5);
  assert.equal(packageless.accepted.length, 4);
  assertTooMany("v1", packageless.refused[0]!);
  await closeAll([...alpha.accepted, ...query.accepted, ...packageless.accepted]);
  await pollUntil(async () => await openWatches(f.metrics) === 0, "every slot given back");
});
