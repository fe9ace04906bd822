// TLS to the API server: a CA bundle (file or kubeconfig data), a client
// certificate, and the failure an untrusted server certificate gives.
import assert from "node:assert/strict";
import { makePod } from "../../_fixtures/pods.ts";
import { makePki } from "../kubelet/_pki.ts";
import { startMtlsKubelet } from "../kubelet/_fake_kubelet.ts";
import {
  ApiServerClient,
  ApiServerError,
  kubeconfigConnection,
} from "../../../src/sources/apiserver/mod.ts";
import { startFakeApiServer } from "../../_support/fake_apiserver.ts";
import { sourceOn } from "./_harness.ts";

Deno.test("ApiServerPodSource lists and watches over TLS with the cluster's CA", async () => {
  await using pki = await makePki();
  await using fake = await startFakeApiServer({
    cert: pki.serverCert,
    key: pki.serverKey,
    token: "t",
    pods: [makePod({ uid: "a", name: "a" })],
  });
  await using h = sourceOn({ server: fake.url, ca: { file: pki.caFile }, token: { token: "t" } });
  assert.equal((await h.list()).length, 1);
  await fake.waitForWatches(1);
  fake.put(makePod({ uid: "b", name: "b" }));
  await h.until((pods) => pods.length === 2, "b over TLS");
});

Deno.test("ApiServerPodSource takes the CA from a kubeconfig's certificate-authority-data", async () => {
  await using pki = await makePki();
  await using fake = await startFakeApiServer({ cert: pki.serverCert, key: pki.serverKey });
  const kubeconfig = `${pki.dir}/kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${fake.url}
    certificate-authority-data: ${btoa(pki.ca)}
users:
- name: test
  user: {}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`,
  );
  await using h = sourceOn(kubeconfigConnection(kubeconfig));
  assert.deepEqual(await h.list(), []);
});

Deno.test("ApiServerPodSource names a TLS failure when the server's certificate is not trusted", async () => {
  await using pki = await makePki();
  await using fake = await startFakeApiServer({
    cert: pki.selfSignedCert,
    key: pki.selfSignedKey,
  });
  await using h = sourceOn({ server: fake.url, ca: { file: pki.caFile }, origin: "in-cluster" });
  const error = await h.failure();
  assert.ok(error instanceof ApiServerError);
  assert.equal(error.reason, "tls");
  assert.match(error.message, new RegExp(`Cannot list pods at ${fake.url}: TLS failure`));
  assert.match(error.message, /check the CA from in-cluster/);
});

Deno.test("ApiServerClient authenticates with a client certificate", async () => {
  await using pki = await makePki();
  const body = JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "9" }, items: [] });
  await using server = await startMtlsKubelet({
    dir: pki.dir,
    certFile: `${pki.dir}/server.crt`,
    keyFile: `${pki.dir}/server.key`,
    caFile: pki.caFile,
    body,
  });
  using withCert = new ApiServerClient({
    server: server.url,
    ca: { file: pki.caFile },
    clientCert: { file: pki.clientCertFile },
    clientKey: { pem: await Deno.readTextFile(pki.clientKeyFile) },
    origin: "test",
  });
  const doc = await withCert.getJson("/pods", "list", AbortSignal.timeout(10_000));
  assert.deepEqual(doc, JSON.parse(body));
  using without = new ApiServerClient({
    server: server.url,
    ca: { file: pki.caFile },
    origin: "t",
  });
  const error = await without.getJson("/pods", "list", AbortSignal.timeout(10_000)).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiServerError);
  assert.ok(error.reason === "tls" || error.reason === "connect", `got ${error.reason}`);
});

Deno.test("ApiServerClient names a credentials file it cannot read", async () => {
  using client = new ApiServerClient({
    server: "https://127.0.0.1:1",
    token: { file: "/nonexistent/token" },
    origin: "t",
  });
  const error = await client.get("/api/v1/pods", "list", AbortSignal.timeout(10_000)).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiServerError);
  assert.equal(error.reason, "credentials");
  assert.match(error.message, /cannot read token file "\/nonexistent\/token"/);
});
