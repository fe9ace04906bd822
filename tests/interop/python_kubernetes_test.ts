// Debian's python3-kubernetes, unchanged, against the HTTP API: lists with
// selectors and paging, a watch cut and resumed from its last
// resourceVersion that misses nothing, bookmarks, and 410 for a token too old.
import assert from "node:assert/strict";
import type { PodObject } from "../../src/model/pod.ts";
import { nodePods, startKubeApi, TOKEN } from "./_kube_api.ts";
import { startSteppedScript } from "./_stepped_script.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const PYTHON = "/usr/bin/python3";

const peer = requirePeer(PEERS.pythonKubernetes);

function relabel(pods: PodObject[], name: string, gen: string): PodObject[] {
  return pods.map((p) =>
    p.metadata.name === name
      ? { ...p, metadata: { ...p.metadata, labels: { ...p.metadata.labels, gen } } }
      : p
  );
}

Deno.test({
  name: peer.name(
    "python-kubernetes lists, pages, watches, resumes without a gap, sees bookmarks and 410",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using k = await startKubeApi({
      flags: ["--watch-history", "5m,4", "--http-watch-bookmark-period", "200ms"],
    });
    await using script = startSteppedScript(PYTHON, [
      new URL("./_kube_python_client.py", import.meta.url).pathname,
      k.server,
      TOKEN,
      k.caFile,
    ]);
    const { step, go } = script;
    const list = await step("list");
    const all = nodePods().map((p) => `${p.metadata.namespace}/${p.metadata.name}`).sort();
    assert.deepEqual(list.keys, all);
    assert.equal(list.containers, all.length);
    assert.deepEqual(list.labelled, ["shop/old-web", "shop/web-1"]);
    assert.deepEqual(list.fields, ["shop/db-0"]);
    assert.deepEqual(list.paged, all, "two pages of 4 give every pod once, in order");
    assert.equal(list.remaining, all.length - 4);
    assert.equal(list.one_uid, "uid-shop-web-1");
    assert.equal(list.one_ip, "10.1.0.11");
    assert.equal(list.not_found, 404);
    assert.equal(list.unauthorized, 401);

    let pods = relabel(nodePods(), "web-1", "1");
    await k.set(pods);
    pods = relabel(pods, "api-7", "1");
    await k.set(pods);
    await go();
    const cut = await step("cut");
    assert.deepEqual(cut.seen, [["MODIFIED", "shop/web-1", "1"]]);

    pods = pods.filter((p) => p.metadata.name !== "batch-1");
    await k.set(pods);
    await go();
    const resumed = await step("resumed");
    assert.deepEqual(resumed.seen, [
      ["MODIFIED", "shop/web-1", "1"],
      ["MODIFIED", "shop/api-7", "1"],
      ["DELETED", "jobs/batch-1", ""],
    ]);

    // The script's next watch waits for a bookmark, sent after 200 ms of the
    // daemon's clock without an event: once the watch has armed that timer,
    // the time passes.
    const bookmarkStep = step("bookmark");
    await k.h.clock.waitForTimers(1, 200);
    k.h.clock.advance(200);
    const bookmark = await bookmarkStep;
    assert.equal(bookmark.rv, resumed.last, "a bookmark names the position reached");
    pods = relabel(pods, "report", "2");
    await k.set(pods);
    pods = relabel(pods, "web-1", "2");
    await k.set(pods);
    await go();
    const end = await step("end");
    assert.deepEqual(end.after_bookmark, [["MODIFIED", "jobs/report"]]);
    assert.equal(end.gone[0], 410);
    assert.match(end.gone[1], /Expired: resume token too old; list again/);
  },
});
