// Where the API server is: a kubeconfig's current context (files relative to
// it, inline data, token or token file), and the in-cluster environment as
// client-go reads it.
import assert from "node:assert/strict";
import {
  apiServerConnectionOf,
  inClusterConnection,
  kubeconfigConnection,
  parseRetryAfter,
} from "../../../src/sources/apiserver/mod.ts";

function config(user: string, cluster = "server: https://10.0.0.1:6443"): string {
  return `
clusters:
- name: c
  cluster:
    ${cluster}
users:
- name: u
  user:
    ${user}
contexts:
- name: x
  context: {cluster: c, user: u}
- name: other
  context: {cluster: c, user: u}
current-context: x
`;
}

const read = (text: string) => ({ readText: () => text });

Deno.test("kubeconfigConnection reads server, CA, token file and client certificate files", () => {
  const c = kubeconfigConnection(
    "/etc/pods-api/kubeconfig",
    read(config(
      "{tokenFile: token, client-certificate: pki/c.crt, client-key: /abs/c.key}",
      "{server: 'https://10.0.0.1:6443/', certificate-authority: ca.crt}",
    )),
  );
  assert.deepEqual(c, {
    server: "https://10.0.0.1:6443",
    ca: { file: "/etc/pods-api/ca.crt" },
    clientCert: { file: "/etc/pods-api/pki/c.crt" },
    clientKey: { file: "/abs/c.key" },
    token: { file: "/etc/pods-api/token" },
    origin: 'kubeconfig "/etc/pods-api/kubeconfig"',
  });
});

Deno.test("kubeconfigConnection decodes the *-data fields and prefers token to tokenFile", () => {
  const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  const c = kubeconfigConnection(
    "k",
    read(config(
      `{token: abc, tokenFile: ignored, client-certificate-data: ${btoa(pem)}, client-key-data: ${
        btoa("key")
      }}`,
      `{server: 'https://h:1', certificate-authority-data: ${btoa(pem)}}`,
    )),
  );
  assert.deepEqual(c.ca, { pem });
  assert.deepEqual(c.clientCert, { pem });
  assert.deepEqual(c.clientKey, { pem: "key" });
  assert.deepEqual(c.token, { token: "abc" });
});

Deno.test("kubeconfigConnection refuses what it cannot do, saying why", () => {
  const cases: [string, string, RegExp][] = [
    [
      "{exec: {command: aws}}",
      "server: https://h",
      /authenticates with exec.*use token, tokenFile/,
    ],
    ["{client-certificate: c.crt}", "server: https://h", /certificate without its key/],
    ["{}", "server: ''", /cluster "c" has no server/],
    ["{}", "server: ftp://h", /not an http\(s\) URL/],
    ["{}", "{server: 'https://h', tls-server-name: x}", /tls-server-name/],
  ];
  for (const [user, cluster, message] of cases) {
    assert.throws(() => kubeconfigConnection("k", read(config(user, cluster))), message);
  }
  assert.throws(() => kubeconfigConnection("k", read("a: [")), /Cannot use kubeconfig "k"/);
  assert.throws(
    () => kubeconfigConnection("k", { ...read(config("{}")), context: "nope" }),
    /no context "nope"/,
  );
  assert.throws(
    () => kubeconfigConnection("/nonexistent/kubeconfig"),
    /Cannot use kubeconfig "\/nonexistent\/kubeconfig"/,
  );
});

Deno.test("inClusterConnection builds the URL, token and CA as client-go does", () => {
  const env: Record<string, string> = {
    KUBERNETES_SERVICE_HOST: "fd00::1",
    KUBERNETES_SERVICE_PORT: "443",
  };
  const c = inClusterConnection({ env: (n) => env[n], exists: () => true });
  assert.equal(c.server, "https://[fd00::1]:443");
  assert.deepEqual(c.token, { file: "/var/run/secrets/kubernetes.io/serviceaccount/token" });
  assert.deepEqual(c.ca, { file: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" });
  assert.throws(
    () => inClusterConnection({ env: () => undefined, exists: () => true }),
    /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set/,
  );
  assert.throws(
    () => inClusterConnection({ env: (n) => env[n], exists: () => false }),
    /no service account token/,
  );
});

Deno.test("parseRetryAfter reads seconds and dates, and caps them", () => {
  assert.equal(parseRetryAfter("3", 0), 3000);
  assert.equal(parseRetryAfter(null, 0), undefined);
  assert.equal(parseRetryAfter("soon", 0), undefined);
  const now = Date.UTC(2026, 0, 1);
  assert.equal(parseRetryAfter(new Date(now + 5000).toUTCString(), now), 5000);
  assert.equal(parseRetryAfter("86400", 0), 5 * 60_000);
});

Deno.test("apiServerConnectionOf reads --apiserver and --apiserver-kubeconfig", () => {
  assert.equal(apiServerConnectionOf("", ""), undefined);
  assert.deepEqual(apiServerConnectionOf("https://10.0.0.2:6443/", ""), {
    server: "https://10.0.0.2:6443",
    origin: "--apiserver",
  });
  assert.throws(() => apiServerConnectionOf("in-cluster", "k"), /choose one/);
  assert.throws(() => apiServerConnectionOf("incluster", ""), /use in-cluster or an http\(s\) URL/);
  const dir = Deno.makeTempDirSync();
  try {
    const file = `${dir}/kubeconfig`;
    Deno.writeTextFileSync(file, config("{token: abc}"));
    assert.equal(apiServerConnectionOf("", file)!.server, "https://10.0.0.1:6443");
    const overridden = apiServerConnectionOf("https://lb:443", file)!;
    assert.equal(overridden.server, "https://lb:443");
    assert.deepEqual(overridden.token, { token: "abc" });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
