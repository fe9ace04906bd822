import assert from "node:assert/strict";
import { FakeClock } from "../../../src/clock.ts";
import { GrpcError, STATUS, type StatusCode } from "../../../src/grpc/status.ts";
import { silentLogger } from "../../../src/log.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import type { AllocatableResources, PodResources } from "../../../src/model/pod_resources.ts";
import {
  ALLOCATABLE_PERIOD_MS,
  MIN_POLL_PERIOD_MS,
  type PodResourcesApi,
  PodResourcesPoller,
} from "../../../src/sources/podresources/mod.ts";
import { gpuPod } from "../../_fixtures/pod_resources.ts";
import { metricValue } from "../../_support/metric_value.ts";

/** A scripted kubelet: answers, or fails a call with the codes queued for it. */
class FakeApi implements PodResourcesApi {
  pods: PodResources[] = [];
  allocatable: AllocatableResources = { devices: [], cpuIds: [0, 1], memory: [] };
  failures: Record<"list" | "allocatable", number[]> = { list: [], allocatable: [] };
  calls: string[] = [];

  #answer<T>(call: "list" | "allocatable", value: T): Promise<T> {
    this.calls.push(call);
    const code = this.failures[call].shift();
    if (code !== undefined) {
      return Promise.reject(new GrpcError(code as StatusCode, `failed ${call}`));
    }
    return Promise.resolve(value);
  }

  list() {
    return this.#answer("list", this.pods);
  }

  getAllocatableResources() {
    return this.#answer("allocatable", this.allocatable);
  }
}

function setUp(options: { optionalSocket?: string; exists?: boolean; periodMs?: number } = {}) {
  const api = new FakeApi();
  const clock = new FakeClock();
  const registry = createMetricsRegistry();
  const seen = { resources: 0, allocatable: 0, availability: [] as Array<[boolean, string]> };
  const poller = new PodResourcesPoller({
    api,
    sink: {
      resources: () => seen.resources++,
      allocatable: () => seen.allocatable++,
      availability: (available, reason) => seen.availability.push([available, reason]),
    },
    clock,
    metrics: registry.metrics,
    log: silentLogger,
    periodMs: options.periodMs ?? 1000,
    random: () => 0.5,
    exists: () => Promise.resolve(options.exists ?? true),
    ...(options.optionalSocket === undefined ? {} : { optionalSocket: options.optionalSocket }),
  });
  return { api, clock, registry, seen, poller, signal: new AbortController().signal };
}

Deno.test("PodResourcesPoller: List every round, GetAllocatableResources at start and every minute", async () => {
  const { api, clock, seen, poller, signal, registry } = setUp();
  api.pods = [gpuPod("ml", "a", ["GPU-1"])];
  assert.deepEqual(await poller.pollOnce(signal), { outcome: "ok", nextDelayMs: 1000 });
  clock.advance(ALLOCATABLE_PERIOD_MS - 1);
  await poller.pollOnce(signal);
  clock.advance(1);
  await poller.pollOnce(signal);
  assert.deepEqual(api.calls, ["list", "allocatable", "list", "list", "allocatable"]);
  assert.deepEqual([seen.resources, seen.allocatable], [3, 2]);
  assert.equal(await metricValue(registry.metrics.podResourcesPolls, { call: "list" }), 3);
  assert.equal(
    await metricValue(registry.metrics.podResourcesPolls, { call: "get_allocatable" }),
    2,
  );
  assert.equal(await metricValue(registry.metrics.podResourcesAvailable), 1);
});

Deno.test("PodResourcesPoller: never polls faster than 10 List calls a second", async () => {
  const { poller, signal } = setUp({ periodMs: 10 });
  assert.equal((await poller.pollOnce(signal)).nextDelayMs, MIN_POLL_PERIOD_MS);
});

Deno.test("PodResourcesPoller: RESOURCE_EXHAUSTED backs off, doubling to 30 s, counted, last state kept", async () => {
  const { api, seen, poller, signal, registry } = setUp();
  api.failures.list = Array(8).fill(STATUS.RESOURCE_EXHAUSTED);
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) {
    const result = await poller.pollOnce(signal);
    assert.equal(result.outcome, "rate_limited");
    delays.push(result.nextDelayMs);
  }
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  assert.equal(seen.resources, 0, "nothing handed on");
  assert.equal(
    await metricValue(registry.metrics.podResourcesErrors, {
      call: "list",
      reason: "rate_limited",
    }),
    7,
  );
  assert.equal(poller.available, undefined, "a busy kubelet is still there");
  await poller.pollOnce(signal); // the eighth refusal
  assert.deepEqual(await poller.pollOnce(signal), { outcome: "ok", nextDelayMs: 1000 });
  assert.equal(seen.resources, 1);
});

Deno.test("PodResourcesPoller: a failing GetAllocatableResources keeps the List answer and retries", async () => {
  const { api, seen, poller, signal, registry } = setUp();
  api.failures.allocatable = [STATUS.UNAVAILABLE];
  assert.equal((await poller.pollOnce(signal)).outcome, "failed");
  assert.deepEqual([seen.resources, seen.allocatable], [1, 0]);
  assert.equal(poller.available, false);
  assert.equal(
    await metricValue(registry.metrics.podResourcesErrors, {
      call: "get_allocatable",
      reason: "unavailable",
    }),
    1,
  );
  assert.equal((await poller.pollOnce(signal)).outcome, "ok");
  assert.deepEqual([seen.resources, seen.allocatable], [2, 1], "fetched again at once");
});

Deno.test("PodResourcesPoller: an absent optional socket is the feature off, not an error", async () => {
  const { api, poller, signal, seen, registry } = setUp({
    optionalSocket: "/nonexistent/kubelet.sock",
    exists: false,
  });
  assert.deepEqual(await poller.pollOnce(signal), {
    outcome: "absent",
    nextDelayMs: ALLOCATABLE_PERIOD_MS,
  });
  assert.deepEqual(api.calls, []);
  assert.deepEqual(seen.availability, [[
    false,
    "no podresources socket at /nonexistent/kubelet.sock",
  ]]);
  assert.equal(await metricValue(registry.metrics.podResourcesErrors), 0);
});
