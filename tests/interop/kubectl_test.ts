// Debian's kubectl, unchanged, against the daemon's HTTP API over HTTPS with
// a bearer token and a kubeconfig from `pods-api kubeconfig`: list, select,
// get as YAML, watch a change, and be refused without the token. The main
// case runs as the README says: the daemon's own self-signed certificate, and
// the kubeconfig that the `pods-api kubeconfig` command prints; the others
// use a certificate from a test CA.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { parse as parseYaml } from "yaml";
import { RUN_FLAGS } from "../client/_sim_daemon.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { type KubeApiHarness, nodePods, startKubeApi } from "./_kube_api.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const KUBECTL = "/usr/bin/kubectl";

// The API is served over HTTPS: the test CA's certificates come from openssl.
const peer = requirePeer(PEERS.kubectl, PEERS.openssl);

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/**
 * The kubeconfig `pods-api kubeconfig` prints for the harness's daemon, as the
 * README makes it (its bind address and token file; the kept certificate's
 * directory, moved from the node's path into the test's), written to a file.
 */
async function kubeconfigFromCli(k: KubeApiHarness): Promise<string> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: [
      ...RUN_FLAGS,
      MAIN,
      "kubeconfig",
      "--http-bind-address",
      new URL(k.server).host,
      "--http-token-file",
      k.tokenFile,
      "--http-cert-dir",
      dirname(k.caFile),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  assert.ok(r.success, d.decode(r.stderr));
  const yaml = d.decode(r.stdout);
  const config = parseYaml(yaml) as {
    clusters: { cluster: Record<string, string> }[];
  };
  const cluster = config.clusters[0]!.cluster;
  assert.equal(cluster.server, k.server);
  assert.equal(cluster["insecure-skip-tls-verify"], undefined, "kubectl checks the certificate");
  assert.equal(
    atob(cluster["certificate-authority-data"]!),
    await Deno.readTextFile(k.caFile),
    "the kubeconfig trusts the certificate the daemon made and kept",
  );
  const file = `${k.h.dir}/node.kubeconfig`;
  await Deno.writeTextFile(file, yaml);
  return file;
}

async function kubectl(
  k: KubeApiHarness,
  args: string[],
  kubeconfig: string = k.kubeconfig,
): Promise<{ ok: boolean; out: string; err: string }> {
  const cacheDir = `${k.h.dir}/kube-cache`;
  const r = await new Deno.Command(KUBECTL, {
    args: ["--kubeconfig", kubeconfig, "--cache-dir", cacheDir, ...args],
    env: { HOME: k.h.dir },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { ok: r.success, out: d.decode(r.stdout), err: d.decode(r.stderr) };
}

/** Splits kubectl's table into rows of cells (columns are 2+ spaces apart). */
function table(text: string): string[][] {
  return text.trimEnd().split("\n").map((line) => line.trim().split(/\s{2,}/));
}

Deno.test({
  name: peer.name(
    "kubectl get pods -A -o wide shows every pod with kubectl's columns and STATUS reasons",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    // The daemon's own self-signed certificate, and the CLI's kubeconfig.
    await using k = await startKubeApi();
    assert.equal(new URL(k.server).protocol, "https:");
    const r = await kubectl(k, ["get", "pods", "-A", "-o", "wide"], await kubeconfigFromCli(k));
    assert.ok(r.ok, r.err);
    const [header, ...rows] = table(r.out);
    assert.deepEqual(header, [
      "NAMESPACE",
      "NAME",
      "READY",
      "STATUS",
      "RESTARTS",
      "AGE",
      "IP",
      "NODE",
      "NOMINATED NODE",
      "READINESS GATES",
    ]);
    const byName = new Map(rows.map((row) => [row[1]!, row]));
    assert.deepEqual(byName.get("web-1"), [
      "shop",
      "web-1",
      "1/1",
      "Running",
      "0",
      "24h",
      "10.1.0.11",
      "node-1",
      "<none>",
      "<none>",
    ]);
    assert.deepEqual(byName.get("api-7")!.slice(2, 5), ["0/1", "CrashLoopBackOff", "5 (5m ago)"]);
    assert.equal(byName.get("db-0")![3], "Init:0/1");
    assert.equal(byName.get("batch-1")![3], "OOMKilled");
    assert.equal(byName.get("report")![3], "Completed");
    assert.equal(byName.get("old-web")![3], "Terminating");
    assert.equal(rows.length, nodePods().length);
  },
});

Deno.test({
  name: peer.name("kubectl selects with -l and --field-selector, and gets one pod as YAML"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using k = await startKubeApi({ tls: true });
    const labelled = await kubectl(k, ["get", "pods", "-n", "shop", "-l", "app=web", "-o", "name"]);
    assert.ok(labelled.ok, labelled.err);
    assert.deepEqual(labelled.out.trim().split("\n").sort(), ["pod/old-web", "pod/web-1"]);
    const running = await kubectl(k, [
      "get",
      "pods",
      "-A",
      "--field-selector",
      "status.phase=Running,metadata.namespace!=jobs",
      "-o",
      "name",
    ]);
    assert.ok(running.ok, running.err);
    assert.deepEqual(running.out.trim().split("\n").sort(), [
      "pod/api-7",
      "pod/old-web",
      "pod/web-1",
    ]);
    const bad = await kubectl(k, ["get", "pods", "-A", "--field-selector", "spec.priority=1"]);
    assert.equal(bad.ok, false);
    assert.match(bad.err, /spec\.priority/);
    const yaml = await kubectl(k, ["get", "pod", "-n", "shop", "web-1", "-o", "yaml"]);
    assert.ok(yaml.ok, yaml.err);
    const pod = parseYaml(yaml.out) as PodObject & { kind: string; apiVersion: string };
    assert.equal(pod.kind, "Pod");
    assert.equal(pod.apiVersion, "v1");
    assert.equal(pod.metadata.uid, "uid-shop-web-1");
    assert.deepEqual(pod.metadata.labels, { app: "web" });
    assert.match(String(pod.metadata.resourceVersion), /^[0-9a-z]+\.\d+$/);
    assert.equal((pod.status as { podIP: string }).podIP, "10.1.0.11");
    const missing = await kubectl(k, ["get", "pod", "-n", "shop", "nope"]);
    assert.equal(missing.ok, false);
    assert.match(missing.err, /pods "nope" not found/);
  },
});

Deno.test({
  name: peer.name("kubectl is refused with a wrong token, as by the API server"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using k = await startKubeApi({ tls: true });
    await Deno.writeTextFile(k.tokenFile, "wrong-token\n");
    const r = await kubectl(k, ["get", "pods", "-A"]);
    assert.equal(r.ok, false);
    assert.match(r.err, /Unauthorized|must be logged in/);
  },
});

Deno.test({
  name: peer.name("kubectl get pods -w sees a change made on the node"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using k = await startKubeApi({ tls: true });
    const child = new Deno.Command(KUBECTL, {
      args: [
        "--kubeconfig",
        k.kubeconfig,
        "--cache-dir",
        `${k.h.dir}/kube-cache`,
        "get",
        "pods",
        "-n",
        "shop",
        "-w",
      ],
      env: { HOME: k.h.dir },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    const until = async (pattern: RegExp) => {
      while (!pattern.test(seen)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`kubectl ended before ${pattern}: ${seen}`);
        seen += value;
      }
    };
    try {
      await until(/old-web[^\n]*\n/);
      assert.match(seen, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
      const before = seen.length;
      // The crash-looping api pod recovers on the node.
      const pods = nodePods().map((p) => {
        if (p.metadata.name !== "api-7") return p;
        return {
          ...p,
          status: {
            ...p.status,
            containerStatuses: [{
              name: "app",
              image: "api",
              imageID: "",
              ready: true,
              restartCount: 6,
              state: { running: { startedAt: "2026-01-01T23:59:00Z" } },
            }],
          },
        };
      });
      await k.set(pods);
      await until(/api-7\s+1\/1\s+Running\s+6\b[^\n]*\n/);
      assert.ok(seen.length > before);
    } finally {
      child.kill("SIGTERM");
      await reader.cancel().catch(() => {});
      await child.stderr.cancel().catch(() => {});
      await child.status;
    }
  },
});
