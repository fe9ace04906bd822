// The HTTP surface's answers as the API server and the kubelet give them,
// read with fetch: documents, errors, paging, Table, watch framing.
import assert from "node:assert/strict";
import { type KubeApiHarness, nodePods, startKubeApi, TOKEN } from "../interop/_kube_api.ts";
import { startHarness } from "../_support/daemon_harness.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

async function get(
  k: KubeApiHarness,
  path: string,
  init: { accept?: string; token?: string; method?: string } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await k.fetch(path, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${init.token ?? TOKEN}`,
      ...(init.accept ? { accept: init.accept } : {}),
    },
  });
  return { status: res.status, body: await res.json() };
}

/** Reads a watch stream's lines until `n` have come. */
async function watchLines(k: KubeApiHarness, path: string, n: number, accept?: string) {
  const controller = new AbortController();
  const res = await k.fetch(path, {
    headers: { authorization: `Bearer ${TOKEN}`, ...(accept ? { accept } : {}) },
    signal: controller.signal,
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const lines: Array<{ type: string; object: Record<string, unknown> }> = [];
  return {
    lines,
    async next(count = n) {
      while (lines.length < count) {
        const { value, done } = await reader.read();
        if (done) return;
        text += value;
        let at;
        while ((at = text.indexOf("\n")) >= 0) {
          lines.push(JSON.parse(text.slice(0, at)));
          text = text.slice(at + 1);
        }
      }
    },
    async close() {
      controller.abort();
      await reader.cancel().catch(() => {});
    },
  };
}

Deno.test("the HTTP API answers discovery, /pods and the API server's errors", async () => {
  await using k = await startKubeApi();
  const api = await get(k, "/api");
  assert.deepEqual(api.body.versions, ["v1"]);
  const core = await get(k, "/api/v1");
  const resources = core.body.resources as Array<{ name: string; verbs: string[] }>;
  assert.deepEqual(resources.find((r) => r.name === "pods")?.verbs, ["get", "list", "watch"]);
  assert.deepEqual((await get(k, "/apis")).body.groups, []);
  const kubelet = await get(k, "/pods");
  assert.equal(kubelet.body.kind, "PodList");
  assert.equal((kubelet.body.items as unknown[]).length, nodePods().length);
  const item = (kubelet.body.items as Array<Record<string, unknown>>)[0]!;
  assert.equal(item.kind, undefined, "list items carry no kind, as the API server writes them");
  const unauthorized = await get(k, "/api/v1/pods", { token: "nope" });
  assert.equal(unauthorized.status, 401);
  assert.deepEqual(unauthorized.body, {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: "Unauthorized",
    reason: "Unauthorized",
    code: 401,
  });
  const missing = await get(k, "/api/v1/namespaces/shop/pods/nope");
  assert.equal(missing.status, 404);
  assert.equal(missing.body.reason, "NotFound");
  assert.deepEqual(missing.body.details, { name: "nope", kind: "pods" });
  assert.equal((await get(k, "/api/v1/services")).status, 404);
  const post = await get(k, "/api/v1/namespaces/shop/pods", { method: "POST" });
  assert.equal(post.status, 405);
  assert.equal(post.body.reason, "MethodNotAllowed");
  const badSelector = await get(k, "/api/v1/pods?fieldSelector=spec.priority%3D1");
  assert.equal(badSelector.status, 400);
  assert.match(String(badSelector.body.message), /"spec\.priority"/);
});

Deno.test("the HTTP API pages with limit and continue, and serves Tables with the printer's columns", async () => {
  await using k = await startKubeApi();
  const names: string[] = [];
  let next = "";
  for (let page = 0; page < 10; page++) {
    const r = await get(k, `/api/v1/pods?limit=2${next ? `&continue=${next}` : ""}`);
    const items = r.body.items as Array<{ metadata: { namespace: string; name: string } }>;
    names.push(...items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`));
    next = ((r.body.metadata as { continue?: string }).continue) ?? "";
    if (next === "") break;
  }
  assert.deepEqual(
    names,
    nodePods().map((p) => `${p.metadata.namespace}/${p.metadata.name}`).sort(),
  );
  const table = await get(k, "/api/v1/namespaces/shop/pods?labelSelector=app%3Dapi", {
    accept: TABLE,
  });
  assert.equal(table.body.kind, "Table");
  assert.equal(table.body.apiVersion, "meta.k8s.io/v1");
  const columns = table.body.columnDefinitions as Array<{ name: string; priority: number }>;
  assert.deepEqual(columns.map((c) => [c.name, c.priority]), [
    ["Name", 0],
    ["Ready", 0],
    ["Status", 0],
    ["Restarts", 0],
    ["Age", 0],
    ["IP", 1],
    ["Node", 1],
    ["Nominated Node", 1],
    ["Readiness Gates", 1],
  ]);
  const rows = table.body.rows as Array<{ cells: string[]; object: Record<string, unknown> }>;
  assert.deepEqual(rows.map((r) => r.cells), [[
    "api-7",
    "0/1",
    "CrashLoopBackOff",
    "5 (5m ago)",
    "24h",
    "10.1.0.12",
    "node-1",
    "<none>",
    "<none>",
  ]]);
  assert.equal(rows[0]!.object.kind, "PartialObjectMetadata");
});

Deno.test("an HTTP watch frames events as the API server does, 410 for a token too old", async () => {
  await using k = await startKubeApi({ flags: ["--watch-history", "5m,2"] });
  const list = await get(k, "/api/v1/namespaces/shop/pods");
  const rv = (list.body.metadata as { resourceVersion: string }).resourceVersion;
  const w = await watchLines(
    k,
    `/api/v1/namespaces/shop/pods?watch=1&resourceVersion=${rv}`,
    1,
    TABLE,
  );
  const changed = nodePods().map((p) =>
    p.metadata.name === "web-1"
      ? { ...p, metadata: { ...p.metadata, labels: { app: "web", v: "2" } } }
      : p
  );
  await k.set(changed);
  await w.next();
  assert.equal(w.lines[0]!.type, "MODIFIED");
  assert.equal(w.lines[0]!.object.kind, "Table");
  const cells = (w.lines[0]!.object.rows as Array<{ cells: string[] }>)[0]!.cells;
  assert.equal(cells[0], "web-1");
  await w.close();

  const initial = await watchLines(
    k,
    "/api/v1/pods?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    nodePods().length + 1,
  );
  await initial.next();
  assert.deepEqual(initial.lines.map((l) => l.type), [
    ...nodePods().map(() => "ADDED"),
    "BOOKMARK",
  ]);
  const bookmark = initial.lines.at(-1)!.object.metadata as Record<string, unknown>;
  assert.deepEqual(bookmark.annotations, { "k8s.io/initial-events-end": "true" });
  await initial.close();

  for (let i = 0; i < 3; i++) {
    await k.set(
      changed.map((p) => ({ ...p, metadata: { ...p.metadata, labels: { gen: String(i) } } })),
    );
  }
  const old = await watchLines(k, `/api/v1/pods?watch=true&resourceVersion=${rv}`, 1);
  await old.next();
  assert.deepEqual(old.lines[0], {
    type: "ERROR",
    object: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "resume token too old; list again",
      reason: "Expired",
      code: 410,
    },
  });
  await old.close();
});

Deno.test("the HTTP API is off unless bound, and answers 503 until the sources synced", async () => {
  await using plain = await startHarness();
  assert.equal(plain.daemon.httpApi, undefined);
  await using h = await startHarness({ flags: ["--http-bind-address", "127.0.0.1:0"] });
  const res = await fetch(`http://127.0.0.1:${h.daemon.httpApi!.port}/api/v1/pods`);
  assert.equal(res.status, 503);
  assert.equal((await res.json()).message, "pod sources are still initializing");
});
