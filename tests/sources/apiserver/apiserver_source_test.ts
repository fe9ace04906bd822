// The API server source against a fake API server: list then watch, resume
// without relist, 410 -> relist keeping unchanged snapshots, and each failure
// named with its server and cause.
import assert from "node:assert/strict";
import { makePod } from "../../_fixtures/pods.ts";
import { metricValue } from "../../_support/metric_value.ts";
import { poll } from "../../_support/poll.ts";
import { ApiServerError } from "../../../src/sources/apiserver/mod.ts";
import {
  forbidden,
  plainStatus,
  startFakeApiServer,
  tooManyRequests,
} from "../../_support/fake_apiserver.ts";
import { ViewRecorder } from "../../_support/view_recorder.ts";
import { sourceOn } from "./_harness.ts";

const names = (pods: readonly { pod: { metadata: { name: string } } }[]) =>
  pods.map((p) => p.pod.metadata.name).sort();

Deno.test("ApiServerPodSource lists, then watches the node's pods and follows them", async () => {
  await using fake = await startFakeApiServer({
    pods: [
      makePod({ uid: "a", name: "a" }),
      makePod({ uid: "b", name: "b" }),
      makePod({ uid: "other", name: "other", nodeName: "node-2" }),
    ],
  });
  await using h = sourceOn({ server: fake.url });
  const first = await h.list();
  assert.deepEqual(names(first), ["a", "b"]);
  const list = fake.requests[0]!;
  assert.equal(list.verb, "list");
  assert.equal(list.params.get("fieldSelector"), "spec.nodeName=node-1");
  assert.equal(list.params.get("resourceVersion"), "0");
  await fake.waitForWatches(1);
  const watch = fake.requests[1]!;
  assert.equal(watch.verb, "watch");
  assert.equal(watch.params.get("allowWatchBookmarks"), "true");
  assert.equal(watch.params.get("resourceVersion"), "1");
  assert.equal(watch.params.get("timeoutSeconds"), "300");
  assert.equal(await h.list(), first, "an unchanged view is the same array");

  fake.put(makePod({ uid: "c", name: "c" }));
  fake.put(makePod({ uid: "a", name: "a", labels: { v: "2" } }));
  fake.remove("b");
  await h.until((pods) => names(pods).join() === "a,c", "the watch's changes");
  const now = await h.list();
  const a = now.find((p) => p.uid === "a")!;
  assert.deepEqual(a.pod.metadata.labels, { v: "2" });
  assert.equal(h.source.resourceVersion, String(fake.resourceVersion));
  assert.equal(await metricValue(h.registry.metrics.apiserverRelists, { reason: "initial" }), 1);
  assert.equal(await metricValue(h.registry.metrics.apiserverWatchEvents, { type: "ADDED" }), 1);
  assert.equal(await metricValue(h.registry.metrics.apiserverWatchEvents, { type: "DELETED" }), 1);
});

Deno.test("ApiServerPodSource renews a watch that times out from its last version, without a relist", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  await using h = sourceOn({ server: fake.url });
  await h.list();
  await fake.waitForWatches(1);
  fake.put(makePod({ uid: "b", name: "b" }));
  await h.until((pods) => pods.length === 2, "b");
  const version = String(fake.resourceVersion);
  fake.endWatches();
  await fake.waitForRequests(3);
  await fake.waitForWatches(1);
  const renewed = fake.requests[2]!;
  assert.equal(renewed.verb, "watch");
  assert.equal(renewed.params.get("resourceVersion"), version);
  assert.equal(fake.requests.filter((r) => r.verb === "list").length, 1);
  assert.equal(
    await metricValue(h.registry.metrics.apiserverWatchRestarts, { reason: "timeout" }),
    1,
  );
  assert.deepEqual(h.retryWaits, [], "a watch that delivered events is renewed at once");
  fake.put(makePod({ uid: "c", name: "c" }));
  await h.until((pods) => pods.length === 3, "c on the renewed watch");
});

Deno.test("ApiServerPodSource gives up a silent watch at its deadline and resumes it", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  await using h = sourceOn({ server: fake.url });
  await h.list();
  await fake.waitForWatches(1);
  fake.bookmark();
  await poll(async () =>
    await metricValue(h.registry.metrics.apiserverWatchEvents, { type: "BOOKMARK" }) === 1 ||
    undefined
  );
  h.fireWatchDeadline();
  await fake.waitForRequests(3);
  assert.equal(fake.requests[2]!.verb, "watch");
  assert.equal(
    await metricValue(h.registry.metrics.apiserverWatchRestarts, { reason: "stalled" }),
    1,
  );
  assert.equal(fake.requests.filter((r) => r.verb === "list").length, 1);
});

Deno.test("ApiServerPodSource moves its version on a bookmark-only stream and changes nothing", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  await using h = sourceOn({ server: fake.url });
  const before = await h.list();
  await fake.waitForWatches(1);
  // Versions move on (another node's pods), this node sees bookmarks only.
  fake.put(makePod({ uid: "x", name: "x", nodeName: "node-2" }));
  fake.put(makePod({ uid: "y", name: "y", nodeName: "node-2" }));
  fake.bookmark();
  await poll(() => h.source.resourceVersion === String(fake.resourceVersion) || undefined, {
    what: "the bookmark's version",
  });
  assert.equal(await h.list(), before);
  fake.endWatches();
  await fake.waitForRequests(3);
  assert.equal(fake.requests[2]!.params.get("resourceVersion"), String(fake.resourceVersion));
});

Deno.test("ApiServerPodSource relists on 410 and keeps the snapshot of every unchanged pod", async () => {
  await using fake = await startFakeApiServer({
    pods: [makePod({ uid: "a", name: "a" }), makePod({ uid: "b", name: "b" })],
  });
  await using h = sourceOn({ server: fake.url });
  const before = await h.list();
  await fake.waitForWatches(1);
  // An empty watch ends: the source waits before the next one, and meanwhile
  // b changes, c comes, and the server forgets every version so far.
  fake.endWatches();
  await poll(() => h.retryWaits.length === 1 || undefined, { what: "the wait" });
  fake.put(makePod({ uid: "b", name: "b", labels: { v: "2" } }));
  fake.put(makePod({ uid: "c", name: "c" }));
  fake.compact();
  h.releaseRetries();
  await h.until((pods) => pods.length === 3, "c after the relist");
  const after = await h.list();
  const lists = fake.requests.filter((r) => r.verb === "list");
  assert.equal(lists.length, 2);
  assert.equal(lists[1]!.params.get("resourceVersionMatch"), "NotOlderThan");
  assert.equal(lists[1]!.params.get("resourceVersion"), "1");
  assert.equal(after.find((p) => p.uid === "a"), before.find((p) => p.uid === "a"));
  assert.notEqual(after.find((p) => p.uid === "b"), before.find((p) => p.uid === "b"));
  assert.equal(await metricValue(h.registry.metrics.apiserverRelists, { reason: "gone" }), 1);
  assert.equal(await metricValue(h.registry.metrics.apiserverWatchRestarts, { reason: "gone" }), 1);
  await fake.waitForWatches(1);
  assert.equal(fake.requests.at(-1)!.params.get("resourceVersion"), String(fake.resourceVersion));
});

Deno.test("ApiServerPodSource names the server and the cause of a 401", async () => {
  await using fake = await startFakeApiServer({ token: "right" });
  await using h = sourceOn({ server: fake.url, token: { token: "wrong" } });
  const error = await h.failure();
  assert.ok(error instanceof ApiServerError);
  assert.equal(error.reason, "http_401");
  assert.match(error.message, new RegExp(`Cannot list pods at ${fake.url}: HTTP 401`));
  assert.match(error.message, /did not accept the credentials from test/);
  assert.equal(await metricValue(h.registry.metrics.apiserverErrors, { cause: "http_401" }), 1);
  assert.equal(h.retryWaits.length, 1);
});

Deno.test("ApiServerPodSource says which RBAC verb a 403 lacks", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  fake.script.push(forbidden("list"));
  await using h = sourceOn({ server: fake.url });
  const listError = await h.failure();
  assert.equal((listError as ApiServerError).reason, "http_403");
  assert.match(listError.message, /lacks RBAC verb "list" on "pods"/);
  assert.match(listError.message, /cannot list resource "pods"/);
  // Granted list but not watch.
  fake.script.push(forbidden("watch"));
  h.releaseRetries();
  await poll(() => fake.requests.length >= 3 || undefined);
  const watchError = await h.failure();
  assert.match(watchError.message, /Cannot watch pods at .*lacks RBAC verb "watch"/);
  h.releaseRetries();
  await h.until((pods) => pods.length === 1, "the pods once both are granted");
  assert.equal(fake.requests.filter((r) => r.verb === "list").length, 2);
});

Deno.test("ApiServerPodSource waits as long as a 429's Retry-After says", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  fake.script.push(tooManyRequests(7));
  await using h = sourceOn({ server: fake.url });
  const error = await h.failure();
  assert.equal((error as ApiServerError).reason, "http_429");
  assert.deepEqual(h.retryWaits, [7000]);
  h.releaseRetries();
  await h.until((pods) => pods.length === 1, "the pods after the wait");
});

Deno.test("ApiServerPodSource backs off with jitter on repeated failures", async () => {
  await using fake = await startFakeApiServer();
  for (let i = 0; i < 3; i++) fake.script.push(plainStatus(503));
  await using h = sourceOn({ server: fake.url }, {
    random: () => 0.5,
    backoff: { random: () => 1 },
  });
  await h.failure();
  for (let i = 1; i <= 2; i++) {
    h.releaseRetries();
    await poll(() => h.retryWaits.length > i || undefined);
  }
  // 800, 1600, 3200 ms, each cut by up to half (random 1: the full half).
  assert.deepEqual(h.retryWaits, [400, 800, 1600]);
  assert.equal(await metricValue(h.registry.metrics.apiserverErrors, { cause: "http_5xx" }), 3);
  h.releaseRetries();
  await h.until((pods) => pods.length === 0, "the (empty) list");
  // random 0.5: timeoutSeconds between the minimum and twice it.
  await fake.waitForWatches(1);
  assert.equal(fake.requests.at(-1)!.params.get("timeoutSeconds"), "450");
});

Deno.test("ApiServerPodSource re-reads a token file that rotates", async () => {
  const dir = await Deno.makeTempDir();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "token-1\n");
  await using fake = await startFakeApiServer({
    token: "token-1",
    pods: [makePod({ uid: "a", name: "a" })],
  });
  await using h = sourceOn({ server: fake.url, token: { file: tokenFile } });
  await h.list();
  await fake.waitForWatches(1);
  assert.equal(fake.requests[0]!.authorization, "Bearer token-1");
  await Deno.writeTextFile(tokenFile, "token-2\n");
  fake.token = "token-2";
  fake.put(makePod({ uid: "b", name: "b" }));
  await h.until((pods) => pods.length === 2, "b");
  fake.endWatches();
  await fake.waitForRequests(3);
  await fake.waitForWatches(1);
  assert.equal(fake.requests[2]!.authorization, "Bearer token-2");
  assert.equal(await metricValue(h.registry.metrics.apiserverErrors, { cause: "http_401" }), 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("ApiServerPodSource serves a mirror pod under its static pod's UID, without managedFields", async () => {
  const mirror = makePod({
    uid: "api-server-uid",
    name: "etcd-node-1",
    namespace: "kube-system",
    annotations: {
      "kubernetes.io/config.source": "file",
      "kubernetes.io/config.hash": "0f1e2d",
      "kubernetes.io/config.mirror": "0f1e2d",
    },
  });
  mirror.metadata.managedFields = [{ manager: "kubelet", operation: "Update" }];
  await using fake = await startFakeApiServer({ pods: [mirror] });
  await using h = sourceOn({ server: fake.url });
  const [pod] = await h.list();
  assert.equal(pod!.uid, "0f1e2d");
  assert.equal(pod!.pod.metadata.uid, "0f1e2d");
  assert.equal(pod!.pod.metadata.managedFields, undefined);
  await fake.waitForWatches(1);
  fake.remove("api-server-uid");
  await h.until((pods) => pods.length === 0, "the mirror pod's deletion");
});

Deno.test("ApiServerPodSource reads a list in pages", async () => {
  const pods = Array.from({ length: 5 }, (_, i) => makePod({ uid: `u${i}`, name: `p${i}` }));
  await using fake = await startFakeApiServer({ pods });
  await using h = sourceOn({ server: fake.url }, { pageSize: 2 });
  assert.equal((await h.list()).length, 5);
  const lists = fake.requests.filter((r) => r.verb === "list");
  assert.deepEqual(lists.map((r) => r.params.get("continue")), [null, "2", "4"]);
});

Deno.test("ApiServerPodSource names a DNS failure and a refused connection", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  await using refused = sourceOn({ server: `http://127.0.0.1:${port}` });
  const connect = await refused.failure();
  assert.equal((connect as ApiServerError).reason, "connect");
  assert.match(
    connect.message,
    new RegExp(`Cannot list pods at http://127.0.0.1:${port}: cannot connect`),
  );
  await using dns = sourceOn({ server: "https://no-such-host.invalid:6443" });
  const lookup = await dns.failure();
  assert.equal((lookup as ApiServerError).reason, "dns");
  assert.match(lookup.message, /DNS lookup of "no-such-host.invalid" failed/);
});

Deno.test("ApiServerPodSource hands a sink that comes after its first list the view at once", async () => {
  await using fake = await startFakeApiServer({ pods: [makePod({ uid: "a", name: "a" })] });
  await using h = sourceOn({ server: fake.url });
  const first = await h.list();
  await fake.waitForWatches(1);
  const late = new ViewRecorder();
  const stop = new AbortController();
  const running = h.source.run(late, stop.signal);
  assert.equal(late.views, 1, "told at once, not at the next change");
  assert.equal(await late.latest(), first);
  stop.abort();
  await running;
});
