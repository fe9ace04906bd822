// DESIGN.md §17's proof without a cluster: this daemon's HTTP surface (§15) is an
// API server for pods, so a second daemon whose API server source points at
// the first must serve the same pods, follow their changes, resume across a
// cut connection without listing again, and list again (emitting nothing for
// unchanged pods) when the first restarts and answers its old version with 410.
import assert from "node:assert/strict";
import { FakeClock } from "../../../src/clock.ts";
import { silentLogger } from "../../../src/log.ts";
import { createMetricsRegistry, type MetricsRegistry } from "../../../src/metrics/registry.ts";
import type { PodObject } from "../../../src/model/pod.ts";
import { ApiServerPodSource } from "../../../src/sources/apiserver/mod.ts";
import { makePod } from "../../_fixtures/pods.ts";
import { type Harness, startHarness } from "../../_support/daemon_harness.ts";
import { metricValue } from "../../_support/metric_value.ts";
import { poll } from "../../_support/poll.ts";
import { startTcpProxy } from "../../_support/socket_proxy.ts";

/** The harness's clock stands still: token buckets never refill, so make them deep. */
const DEEP_BUCKETS = ["--rate-limit-burst", "100000", "--connection-rate-limit-burst", "100000"];
const HTTP = ["--http-bind-address", "127.0.0.1:0", ...DEEP_BUCKETS];

function pods(generation: number): PodObject[] {
  return Array.from({ length: 6 }, (_, i) =>
    makePod({
      uid: `uid-${i}`,
      name: `web-${i}`,
      namespace: i % 2 === 0 ? "shop" : "jobs",
      labels: { app: "web", generation: String(i < 2 ? generation : 0) },
      podIP: `10.1.0.${10 + i}`,
    }))
    // Generation 2 drops the last pod; generation 3 adds one.
    .slice(0, generation === 2 ? 5 : 6)
    .concat(generation === 3 ? [makePod({ uid: "uid-new", name: "new", podIP: "10.1.0.99" })] : []);
}

/** The pods a daemon serves over HTTP, without the daemon's own resourceVersions. */
async function served(h: Harness): Promise<unknown[]> {
  const res = await fetch(`http://127.0.0.1:${h.daemon.httpApi!.port}/api/v1/pods`);
  const list = await res.json() as { items: PodObject[] };
  return list.items
    .map((p) => {
      const { resourceVersion: _rv, ...metadata } = p.metadata;
      return { ...p, metadata };
    })
    .sort((a, b) => a.metadata.uid < b.metadata.uid ? -1 : 1);
}

async function podEvents(registry: MetricsRegistry): Promise<number> {
  let sum = 0;
  for (const type of ["ADDED", "MODIFIED", "DELETED"]) {
    sum += await metricValue(registry.metrics.podEvents, { type });
  }
  return sum;
}

class Chain implements AsyncDisposable {
  /** List requests this test itself made to the first daemon. */
  ownLists = 0;
  constructor(
    public first: Harness,
    readonly second: Harness,
    readonly source: ApiServerPodSource,
    readonly registry: MetricsRegistry,
  ) {}

  /** Waits until the second daemon serves what the first does. */
  async same(what: string): Promise<unknown[]> {
    let want: unknown[] = [];
    await poll(async () => {
      await this.second.daemon.relistOnce();
      want = await served(this.first);
      this.ownLists++;
      try {
        assert.deepEqual(await served(this.second), want);
        return true;
      } catch {
        return undefined;
      }
    }, { what });
    return want;
  }

  /** List requests the first daemon answered for the second. */
  async listsServed(): Promise<number> {
    const all = await metricValue(this.first.daemon.registry.metrics.httpRequests, {
      verb: "list",
      code: "200",
    });
    return all - this.ownLists;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.source.stop();
    await this.second[Symbol.asyncDispose]();
    await this.first[Symbol.asyncDispose]();
  }
}

async function startFirst(generation: number, flags = HTTP): Promise<Harness> {
  const first = await startHarness({ flags });
  first.source.set(pods(generation));
  await first.daemon.relistOnce();
  return first;
}

Deno.test("a daemon pointed at another daemon's HTTP API serves its pods, follows them, resumes and relists", async (t) => {
  const first = await startFirst(1);
  const firstPort = first.daemon.httpApi!.port;
  await using proxy = startTcpProxy(firstPort);
  const registry = createMetricsRegistry();
  const source = new ApiServerPodSource({
    connection: { server: `http://127.0.0.1:${proxy.port}`, origin: "test" },
    nodeName: "node-1",
    clock: new FakeClock(),
    log: silentLogger,
    metrics: registry.metrics,
  });
  const second = await startHarness({ flags: HTTP, sources: [source], registry });
  await using chain = new Chain(first, second, source, registry);
  const m = registry.metrics;

  await t.step("the same pods", async () => {
    const pods = await chain.same("the first list");
    assert.equal(pods.length, 6);
    assert.equal(await chain.listsServed(), 1);
  });

  await t.step("its churn, on the watch", async () => {
    chain.first.source.set(pods(2));
    await chain.first.daemon.relistOnce();
    assert.equal((await chain.same("generation 2")).length, 5);
    chain.first.source.set(pods(3));
    await chain.first.daemon.relistOnce();
    assert.equal((await chain.same("generation 3")).length, 7);
    assert.equal(await chain.listsServed(), 1, "no list after the first");
  });

  await t.step("a cut connection resumes from the last version, without a list", async () => {
    const accepted = proxy.accepted;
    proxy.cut();
    chain.first.source.set(pods(4));
    await chain.first.daemon.relistOnce();
    await chain.same("generation 4 after the cut");
    assert.ok(proxy.accepted > accepted, "a new connection");
    assert.equal(await chain.listsServed(), 1);
    assert.equal(await metricValue(m.apiserverRelists, { reason: "gone" }), 0);
    const restarts = await metricValue(m.apiserverWatchRestarts, { reason: "broken" }) +
      await metricValue(m.apiserverWatchRestarts, { reason: "timeout" }) +
      await metricValue(m.apiserverWatchRestarts, { reason: "error" });
    assert.ok(restarts >= 1, "the cut watch was opened again");
  });

  await t.step(
    "a restart of the first daemon: 410, one list, no event for unchanged pods",
    async () => {
      const events = await podEvents(registry);
      const version = chain.second.daemon.cache.resourceVersion;
      await chain.first[Symbol.asyncDispose]();
      chain.first = await startFirst(4, [
        "--http-bind-address",
        `127.0.0.1:${firstPort}`,
        ...DEEP_BUCKETS,
      ]);
      chain.ownLists = 0;
      await poll(
        async () => await metricValue(m.apiserverRelists, { reason: "gone" }) === 1 || undefined,
        {
          what: "the relist after 410",
        },
      );
      await chain.same("the restarted daemon's pods");
      assert.equal(await chain.listsServed(), 1, "one list of the restarted daemon");
      assert.equal(chain.second.daemon.cache.resourceVersion, version, "nothing changed");
      assert.equal(await podEvents(registry), events);
      chain.first.source.set(pods(5));
      await chain.first.daemon.relistOnce();
      await chain.same("a change after the restart");
      assert.ok(chain.second.daemon.cache.resourceVersion > version);
    },
  );
});
