import assert from "node:assert/strict";
import { createLogger, silentLogger } from "../../../src/log.ts";
import type { Metrics } from "../../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import type { JsonObject } from "../../../src/model/json.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import { SourceUnavailableError } from "../../../src/sources/mod.ts";
import {
  KubeletPodSource,
  type KubeletPodSourceOptions,
} from "../../../src/sources/kubelet/mod.ts";
import { type FakeKubelet, startFakeKubelet, startMtlsKubelet } from "./_fake_kubelet.ts";
import { makePki, type Pki } from "./_pki.ts";
import { pollUntil } from "../../_support/poll.ts";

const FIXTURE = new URL("../../_fixtures/kubelet/pods.json", import.meta.url);
const PODS_TEXT = Deno.readTextFileSync(FIXTURE);
const PODS = JSON.parse(PODS_TEXT) as { items: JsonObject[] };

interface Setup extends AsyncDisposable {
  pki: Pki;
  kubelet: FakeKubelet;
  tokenFile: string;
  metrics: Metrics;
  source(options?: Partial<KubeletPodSourceOptions>): KubeletPodSource;
}

async function setup(): Promise<Setup> {
  const pki = await makePki();
  const kubelet = await startFakeKubelet({
    cert: pki.serverCert,
    key: pki.serverKey,
    behaviour: { token: "token-1", body: PODS_TEXT },
  });
  const tokenFile = `${pki.dir}/token`;
  await Deno.writeTextFile(tokenFile, "token-1\n");
  const metrics = createMetricsRegistry().metrics;
  const sources: KubeletPodSource[] = [];
  return {
    pki,
    kubelet,
    tokenFile,
    metrics,
    source(options = {}) {
      const source = new KubeletPodSource({
        url: kubelet.url,
        tokenFile,
        caFile: pki.caFile,
        log: silentLogger,
        metrics,
        ...options,
      });
      sources.push(source);
      return source;
    },
    async [Symbol.asyncDispose]() {
      for (const s of sources) s.close();
      await kubelet[Symbol.asyncDispose]();
      await pki[Symbol.asyncDispose]();
    },
  };
}

function list(source: KubeletPodSource): Promise<readonly PodSnapshot[]> {
  return source.list(new AbortController().signal);
}

async function failure(source: KubeletPodSource): Promise<SourceUnavailableError> {
  try {
    await list(source);
  } catch (error) {
    assert.ok(error instanceof SourceUnavailableError, `unexpected ${error}`);
    return error;
  }
  assert.fail("list() succeeded");
}

async function rejectedCount(metrics: Metrics, reason: string): Promise<number> {
  const { values } = await metrics.sourceItemsRejected.get();
  return values.find((v) => v.labels.source === "kubelet" && v.labels.reason === reason)?.value ??
    0;
}

Deno.test("KubeletPodSource.list() reads /pods over HTTPS with a bearer token", async () => {
  await using s = await setup();
  const source = s.source();
  const pods = await list(source);
  assert.deepEqual(pods.map((p) => p.uid), PODS.items.map((p) => (p.metadata as JsonObject).uid));
  assert.deepEqual(pods.map((p) => p.pod), PODS.items, "every field of every pod is kept");
  assert.equal(s.kubelet.authorizations.at(-1), "Bearer token-1");

  // The token file is read at every call: a rotated token is used at once.
  s.kubelet.behaviour = { ...s.kubelet.behaviour, token: "token-2" };
  await Deno.writeTextFile(s.tokenFile, "token-2");
  await list(source);
  assert.equal(s.kubelet.authorizations.at(-1), "Bearer token-2");
});

Deno.test("KubeletPodSource.list() does not parse unchanged bytes again", async () => {
  await using s = await setup();
  const source = s.source();
  const first = await list(source);
  const second = await list(source);
  assert.equal(second, first, "same bytes: the same array");

  const changed = structuredClone(PODS);
  ((changed.items[3]!.status as JsonObject).containerStatuses as JsonObject[])[0]!.restartCount = 1;
  s.kubelet.behaviour = { ...s.kubelet.behaviour, body: JSON.stringify(changed) };
  const third = await list(source);
  assert.notEqual(third, first);
  for (let i = 0; i < 3; i++) assert.equal(third[i], first[i], `pod ${i} unchanged: same object`);
  assert.notEqual(third[3], first[3]);

  // Reformatted but equal: new bytes, the same objects and array.
  s.kubelet.behaviour = { ...s.kubelet.behaviour, body: JSON.stringify(changed, null, 2) };
  assert.equal(await list(source), third);
});

Deno.test("KubeletPodSource.list() maps failures to reasons", async (t) => {
  await using s = await setup();
  const cases: { name: string; behaviour: FakeKubelet["behaviour"]; reason: string }[] = [
    { name: "wrong token", behaviour: { token: "other", body: PODS_TEXT }, reason: "http_401" },
    { name: "forbidden", behaviour: { status: 403, body: "Forbidden" }, reason: "http_403" },
    { name: "not found", behaviour: { status: 404, body: "no" }, reason: "http_4xx" },
    { name: "server error", behaviour: { status: 500, body: "boom" }, reason: "http_5xx" },
    { name: "garbage", behaviour: { body: "<html>not json" }, reason: "invalid_json" },
    {
      name: "truncated JSON",
      behaviour: { body: PODS_TEXT.slice(0, 500) },
      reason: "invalid_json",
    },
    {
      name: "not a PodList",
      behaviour: { body: '{"kind":"Status","items":3}' },
      reason: "invalid_json",
    },
    {
      name: "invalid UTF-8",
      behaviour: { body: new Uint8Array([0x7b, 0xff, 0x7d]) },
      reason: "invalid_json",
    },
  ];
  const source = s.source();
  const good = await list(source);
  for (const c of cases) {
    await t.step(c.name, async () => {
      s.kubelet.behaviour = c.behaviour;
      assert.equal((await failure(source)).reason, c.reason);
    });
  }
  await t.step("recovers after failures", async () => {
    s.kubelet.behaviour = { token: "token-1", body: PODS_TEXT };
    assert.deepEqual((await list(source)).map((p) => p.uid), good.map((p) => p.uid));
  });
});

Deno.test("KubeletPodSource.list() times out a slow kubelet", async () => {
  await using s = await setup();
  s.kubelet.behaviour = { hang: true };
  const source = s.source({ timeoutMs: 100 });
  const error = await failure(source);
  assert.equal(error.reason, "timeout");
});

Deno.test("KubeletPodSource.list() stops at the caller's abort", async () => {
  await using s = await setup();
  s.kubelet.behaviour = { hang: true };
  const source = s.source();
  const controller = new AbortController();
  const pending = source.list(controller.signal);
  await pollUntil(() => s.kubelet.authorizations.length > 0, "the request at the kubelet");
  const reason = new Error("shutdown");
  controller.abort(reason);
  await assert.rejects(pending, (error) => error === reason);
});

Deno.test("KubeletPodSource.list() refuses an answer that is too large", async () => {
  await using s = await setup();
  const source = s.source({ maxResponseBytes: 1024 });
  assert.equal((await failure(source)).reason, "too_large");
});

Deno.test("KubeletPodSource.list() skips and counts malformed pods", async () => {
  await using s = await setup();
  const doc = structuredClone(PODS);
  const noUid = structuredClone(doc.items[0]!);
  delete (noUid.metadata as JsonObject).uid;
  (noUid.metadata as JsonObject).name = "no-uid";
  const dup = structuredClone(doc.items[1]!);
  doc.items.push(noUid, dup, "not a pod" as unknown as JsonObject);
  s.kubelet.behaviour = { token: "token-1", body: JSON.stringify(doc) };
  const source = s.source();
  const pods = await list(source);
  assert.equal(pods.length, 4);
  assert.equal(await rejectedCount(s.metrics, "invalid_pod"), 2);
  assert.equal(await rejectedCount(s.metrics, "duplicate_uid"), 1);
  // Still there in a changed answer: counted once while it lasts.
  (doc.items[0]!.metadata as JsonObject).labels = { changed: "yes" };
  s.kubelet.behaviour = { token: "token-1", body: JSON.stringify(doc) };
  await list(source);
  assert.equal(await rejectedCount(s.metrics, "invalid_pod"), 2);
});

Deno.test("KubeletPodSource.list() drops TypeMeta from list items", async () => {
  await using s = await setup();
  const doc = structuredClone(PODS);
  doc.items[0] = { kind: "Pod", apiVersion: "v1", ...doc.items[0]! };
  s.kubelet.behaviour = { token: "token-1", body: JSON.stringify(doc) };
  const [first] = await list(s.source());
  assert.equal(first!.pod.kind, undefined);
  assert.deepEqual(first!.pod, PODS.items[0]);
});

Deno.test("KubeletPodSource.list() fails with reason tls on an untrusted certificate", async () => {
  await using s = await setup();
  assert.equal((await failure(s.source({ caFile: "" }))).reason, "tls");
  const wrongCa = `${s.pki.dir}/self.crt`;
  assert.equal((await failure(s.source({ caFile: wrongCa }))).reason, "tls");
});

Deno.test("KubeletPodSource.list() fails with reason connect when nothing listens", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  using source = new KubeletPodSource({
    url: `http://127.0.0.1:${port}`,
    tokenFile: "",
    log: silentLogger,
  });
  assert.equal((await failure(source)).reason, "connect");
});

Deno.test("KubeletPodSource.list() fails with reason credentials on a missing token file", async () => {
  await using s = await setup();
  assert.equal(
    (await failure(s.source({ tokenFile: `${s.pki.dir}/absent` }))).reason,
    "credentials",
  );
});

Deno.test("KubeletPodSource.list() reads the read-only port over plain HTTP", async () => {
  await using kubelet = await startFakeKubelet({ behaviour: { body: PODS_TEXT } });
  using source = new KubeletPodSource({ url: kubelet.url, tokenFile: "", log: silentLogger });
  assert.equal((await list(source)).length, 4);
  assert.equal(kubelet.authorizations.at(-1), null, "no token sent");
});

Deno.test("KubeletPodSource.list() authenticates with a client certificate", async () => {
  await using pki = await makePki();
  await using kubelet = await startMtlsKubelet({
    dir: pki.dir,
    certFile: `${pki.dir}/server.crt`,
    keyFile: `${pki.dir}/server.key`,
    caFile: pki.caFile,
    body: PODS_TEXT,
  });
  using withCert = new KubeletPodSource({
    url: kubelet.url,
    caFile: pki.caFile,
    clientCertFile: pki.clientCertFile,
    clientKeyFile: pki.clientKeyFile,
    log: silentLogger,
  });
  assert.equal((await list(withCert)).length, 4);

  using without = new KubeletPodSource({
    url: kubelet.url,
    caFile: pki.caFile,
    tokenFile: "",
    log: silentLogger,
  });
  const reason = (await failure(without)).reason;
  assert.ok(reason === "tls" || reason === "connect", `got ${reason}`);
});

Deno.test("KubeletPodSource with insecureSkipTlsVerify needs Deno's process-wide flag", async () => {
  await using pki = await makePki();
  await using kubelet = await startFakeKubelet({
    cert: pki.selfSignedCert,
    key: pki.selfSignedKey,
    behaviour: { body: PODS_TEXT },
  });
  const lines: JsonObject[] = [];
  using source = new KubeletPodSource({
    url: kubelet.url,
    tokenFile: "",
    insecureSkipTlsVerify: true,
    log: createLogger({ write: (line) => lines.push(JSON.parse(line)) }),
  });
  assert.equal(
    (await failure(source)).reason,
    "tls",
    "without the flag the certificate is checked",
  );
  assert.equal(lines.filter((l) => l.level === "warn").length, 1, "the operator is told why");

  // With the flag (as `deno run` or `deno compile` would set it), the same source reads the pods.
  const script = `
    import { KubeletPodSource } from ${
    JSON.stringify(new URL("../../../src/sources/kubelet/mod.ts", import.meta.url).href)
  };
    import { silentLogger } from ${
    JSON.stringify(new URL("../../../src/log.ts", import.meta.url).href)
  };
    using source = new KubeletPodSource({ url: Deno.args[0], tokenFile: "", insecureSkipTlsVerify: true, log: silentLogger });
    console.log((await source.list(AbortSignal.timeout(10000))).length);
  `;
  // `deno eval` takes no permission flags on 2.9.3, so the script runs from a file.
  const scriptFile = await Deno.makeTempFile({ suffix: ".ts" });
  await Deno.writeTextFile(scriptFile, script);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--unsafely-ignore-certificate-errors=127.0.0.1",
      "--allow-net=127.0.0.1",
      "--allow-read",
      scriptFile,
      kubelet.url,
    ],
    cwd: new URL("../../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output().finally(() => Deno.remove(scriptFile));
  const err = new TextDecoder().decode(stderr);
  assert.equal(code, 0, err);
  assert.equal(new TextDecoder().decode(stdout).trim(), "4");
});

Deno.test("KubeletPodSource constructor rejects bad options", () => {
  assert.throws(() => new KubeletPodSource({ url: "ftp://x", log: silentLogger }), TypeError);
  assert.throws(() => new KubeletPodSource({ url: "not a url", log: silentLogger }), TypeError);
  assert.throws(
    () => new KubeletPodSource({ clientCertFile: "/c.pem", log: silentLogger }),
    TypeError,
  );
  assert.throws(() => new KubeletPodSource({ timeoutMs: 0, log: silentLogger }), RangeError);
  const source = new KubeletPodSource({ url: "https://127.0.0.1:10250/", log: silentLogger });
  assert.equal(source.url, "https://127.0.0.1:10250/pods");
});
