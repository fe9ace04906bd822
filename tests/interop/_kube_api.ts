/**
 * The daemon with its Kubernetes-compatible HTTP API on, for the real-client
 * tests (kubectl, python-kubernetes): pods whose kubectl STATUS is each of
 * the printer's reasons, a token file, optionally TLS, and a kubeconfig made
 * by `pods-api kubeconfig`'s code.
 *
 * @module
 */

import type { PodObject } from "../../src/model/pod.ts";
import { kubeconfigCommand } from "../../src/client/kubeconfig.ts";
import { FakeClock } from "../../src/clock.ts";
import { type Harness, startHarness } from "../_support/daemon_harness.ts";
import { makePod } from "../_fixtures/pods.ts";
import { makePki } from "../sources/kubelet/_pki.ts";

/** The bearer token of the tests. */
export const TOKEN = "s3cr3t-token-for-tests";

/** A harness with the HTTP API, and how clients reach it. */
export interface KubeApiHarness extends AsyncDisposable {
  readonly h: Harness;
  /** `http://127.0.0.1:PORT` or `https://...`. */
  readonly server: string;
  readonly kubeconfig: string;
  readonly tokenFile: string;
  /** The CA file clients trust: the test PKI's (`tls`), else the daemon's self-signed one. */
  readonly caFile: string;
  /** `fetch` through a client that trusts {@linkcode caFile}. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Replaces the node's pods and relists. */
  set(pods: PodObject[]): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 2);

function running(name: string, ns: string, labels: Record<string, string>, ip: string) {
  return makePod({ uid: `uid-${ns}-${name}`, name, namespace: ns, labels, podIP: ip });
}

/** Pods whose STATUS column covers the printer's reasons. */
export function nodePods(): PodObject[] {
  const web = running("web-1", "shop", { app: "web" }, "10.1.0.11");
  web.status!.containerStatuses = [{
    name: "app",
    image: "nginx",
    imageID: "",
    ready: true,
    restartCount: 0,
    state: { running: { startedAt: "2026-01-01T00:00:10Z" } },
  }];
  web.status!.conditions = [{ type: "Ready", status: "True" }];
  const crash = running("api-7", "shop", { app: "api" }, "10.1.0.12");
  crash.status!.containerStatuses = [{
    name: "app",
    image: "api",
    imageID: "",
    ready: false,
    restartCount: 5,
    state: { waiting: { reason: "CrashLoopBackOff", message: "back-off" } },
    lastState: {
      terminated: {
        exitCode: 1,
        reason: "Error",
        startedAt: "2026-01-01T23:50:00Z",
        finishedAt: "2026-01-01T23:55:00Z",
      },
    },
  }];
  const init = makePod({
    uid: "uid-shop-db-0",
    name: "db-0",
    namespace: "shop",
    labels: { app: "db" },
    phase: "Pending",
    initContainers: ["migrate"],
  });
  init.status!.initContainerStatuses = [{
    name: "migrate",
    image: "x",
    imageID: "",
    ready: false,
    restartCount: 0,
    state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
  }];
  const oom = running("batch-1", "jobs", { app: "batch" }, "10.1.0.14");
  oom.status!.containerStatuses = [{
    name: "app",
    image: "x",
    imageID: "",
    ready: false,
    restartCount: 0,
    state: {
      terminated: {
        exitCode: 137,
        reason: "OOMKilled",
        startedAt: "2026-01-01T00:00:00Z",
        finishedAt: "2026-01-01T00:01:00Z",
      },
    },
  }];
  const done = makePod({
    uid: "uid-jobs-report",
    name: "report",
    namespace: "jobs",
    labels: { app: "report" },
    phase: "Succeeded",
  });
  done.status!.containerStatuses = [{
    name: "app",
    image: "x",
    imageID: "",
    ready: false,
    restartCount: 0,
    state: {
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAt: "2026-01-01T00:00:00Z",
        finishedAt: "2026-01-01T00:02:00Z",
      },
    },
  }];
  const leaving = running("old-web", "shop", { app: "web" }, "10.1.0.15");
  leaving.metadata.deletionTimestamp = "2026-01-01T23:59:00Z";
  return [web, crash, init, oom, done, leaving];
}

/**
 * Starts the daemon with the HTTP API on a free loopback port.
 *
 * @param options `tls` serves HTTPS; `flags` adds serve flags.
 * @returns The harness, synced with {@linkcode nodePods}.
 */
export async function startKubeApi(
  options: { tls?: boolean; flags?: string[] } = {},
): Promise<KubeApiHarness> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-kube-" });
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, TOKEN + "\n");
  const flags = [
    "--http-bind-address",
    "127.0.0.1:0",
    "--http-token-file",
    tokenFile,
    // The fake clock never refills a bucket: room for every request of a test.
    "--connection-rate-limit-burst",
    "1000",
    "--rate-limit-burst",
    "1000",
  ];
  // With a token and no certificate the daemon serves HTTPS with one it makes here.
  const certDir = `${dir}/pki`;
  flags.push("--http-cert-dir", certDir);
  let caFile = `${certDir}/pods-api-http-ca.crt`;
  let certFile = "";
  if (options.tls) {
    await using pki = await makePki();
    certFile = `${dir}/tls.crt`;
    await Deno.writeTextFile(certFile, pki.serverCert);
    await Deno.writeTextFile(`${dir}/tls.key`, pki.serverKey);
    caFile = `${dir}/ca.crt`;
    await Deno.writeTextFile(caFile, pki.ca);
    flags.push("--http-tls-cert-file", certFile, "--http-tls-private-key-file", `${dir}/tls.key`);
  }
  const h = await startHarness({
    clock: new FakeClock(T0),
    flags: [...flags, ...(options.flags ?? [])],
  });
  const port = h.daemon.httpApi!.port;
  const kubeconfig = `${dir}/kubeconfig`;
  const yaml = kubeconfigCommand(
    [
      "--http-bind-address",
      `127.0.0.1:${port}`,
      "--http-token-file",
      tokenFile,
      ...(certFile === "" ? ["--http-cert-dir", certDir] : ["--http-tls-cert-file", caFile]),
    ],
    (path) => Deno.readTextFileSync(path),
  );
  await Deno.writeTextFile(kubeconfig, yaml);
  const set = async (pods: PodObject[]) => {
    h.source.set(pods);
    if (!await h.daemon.relistOnce()) throw new Error("relist failed");
  };
  await set(nodePods());
  const server = `${h.daemon.httpApi!.scheme}://127.0.0.1:${port}`;
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(caFile)] });
  return {
    h,
    server,
    kubeconfig,
    tokenFile,
    caFile,
    set,
    fetch: (path, init) => fetch(server + path, { ...init, client }),
    async [Symbol.asyncDispose]() {
      client.close();
      await h[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
