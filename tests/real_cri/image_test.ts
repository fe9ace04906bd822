/**
 * The shipped image on a real containerd (started by `scripts/real_cri/up.sh`),
 * run as `deploy/base/daemonset.yaml` describes: `deno task image` builds the
 * archive, `ctr images import` puts it in the `k8s.io` namespace, and the
 * pod is created over CRI with the manifest's args, env, mounts (hostPath
 * volumes mapped to test directories standing in for the node's paths),
 * securityContext and host network (tests/real_cri/_daemonset_pod.ts).
 * Checked from outside the container: ListPods over the socket in the
 * mounted directory lists the pods this containerd runs, `/readyz` turns
 * ready, the OCI spec containerd generated matches the manifest, and
 * StopContainer stops it cleanly (exit 0, socket removed).
 *
 * Runs with `PODS_API_REAL_CRI_SOCKET` (as root); `scripts/real_cri/run_test.sh`
 * sets it up. The socket must be named `containerd.sock` in a directory of
 * its own: that directory is mounted at `/run/containerd`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { basename, dirname } from "node:path";
import { removeKubeletPod, runKubeletPod } from "../../src/sim/runtime/cri_kubelet.ts";
import { CONTAINER_STATE, CriClient } from "../../src/sources/cri/mod.ts";
import { IMAGE_PATHS, imageEntrypoint, MAX_IMAGE_BYTES } from "../../scripts/image.ts";
import { daemonSetPod, readConfigMaps, readDaemonSet } from "./_daemonset_pod.ts";
import { RUN_FLAGS } from "../client/_sim_daemon.ts";
import { poll } from "../_support/poll.ts";

const SOCKET = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
const STATE = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
const REPO = new URL("../../", import.meta.url).pathname;
const BUSYBOX = "localhost/real-cri/busybox:1";
/** Bound of every wait: generous for a loaded machine. */
const DEADLINE_MS = 90_000;
const DECODER = new TextDecoder();

function report(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
}

/** Calls `fn` every 100 ms until it returns a value, up to {@linkcode DEADLINE_MS}. */
function pollFor<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  return poll(fn, { what, timeoutMs: DEADLINE_MS, intervalMs: 100 });
}

async function run(
  cmd: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: REPO,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: DECODER.decode(out.stdout), stderr: DECODER.decode(out.stderr) };
}

/** `pods-api list` from the source tree, as a client on the node would run it. */
function listOn(socket: string, format: string) {
  return run(Deno.execPath(), [
    ...RUN_FLAGS,
    "main.ts",
    "list",
    `--socket=${socket}`,
    "-o",
    format,
  ]);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function get(url: string): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(url);
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

interface OciSpec {
  process: {
    args: string[];
    env: string[];
    user: { uid: number; gid: number };
    noNewPrivileges?: boolean;
    capabilities: { bounding?: string[]; effective?: string[] };
  };
  root: { path: string; readonly?: boolean };
  mounts: { destination: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string; path?: string }[]; seccomp?: unknown };
}

Deno.test({
  name: "deno task image: runs on containerd as deploy/base/daemonset.yaml describes",
  ignore: SOCKET === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    assert.equal(basename(SOCKET!), "containerd.sock", "the socket is named as on a node");
    const kubelet = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const work = await Deno.makeTempDir({ dir: STATE, prefix: "image-test-" });
    const node = {
      socketDir: `${work}/run-pods-api`,
      kubeletPodsApiDir: `${work}/var-lib-kubelet-pods-api`,
      // No kubelet here: an empty podresources directory (the feature stays off).
      podResourcesDir: `${work}/var-lib-kubelet-pod-resources`,
      manifests: `${work}/etc-kubernetes-manifests`,
    };
    for (const dir of [...Object.values(node), `${work}/empty`, `${work}/logs`]) {
      await Deno.mkdir(dir, { recursive: true });
    }
    const doc = await readDaemonSet();
    const metricsPort = freePort();
    const uid = `pods-api-${crypto.randomUUID().slice(0, 8)}`;
    const pod = daemonSetPod(doc, {
      nodeName: "real-node",
      hostPaths: {
        "/run/pods-api": node.socketDir,
        "/var/lib/kubelet/pods-api": node.kubeletPodsApiDir,
        "/var/lib/kubelet/pod-resources": node.podResourcesDir,
        "/run/containerd": dirname(SOCKET!),
        "/etc/kubernetes/manifests": node.manifests,
      },
      emptyDirRoot: `${work}/empty`,
      configMaps: await readConfigMaps(),
      metricsPort,
      uid,
      logRoot: `${work}/logs`,
    });
    for (const dir of Object.values(pod.volumeSources)) await Deno.mkdir(dir, { recursive: true });
    for (const [path, text] of Object.entries(pod.files)) await Deno.writeTextFile(path, text);
    const socketArg = pod.manifestArgs.find((a) => a.startsWith("--socket="))!;
    const apiSocket = `${node.socketDir}/${basename(socketArg.slice("--socket=".length))}`;
    // No kubelet serves its Pods API here: the daemon answers on that path too.
    const compatSocket = `${node.kubeletPodsApiDir}/pods-api.sock`;
    const sandboxes: string[] = [];
    let containerId: string | undefined;
    let logFile = "";
    try {
      await t.step("deno task image builds an archive under the size budget", async () => {
        const built = await run(Deno.execPath(), ["task", "image"]);
        assert.equal(built.code, 0, built.stderr);
        const lines = built.stderr.split("\n");
        const line = lines.find((l) => l.startsWith("image: wrote")) ?? "";
        report(line);
        assert.match(line, new RegExp(` ${pod.container.image.replace(/[.]/g, "\\.")} `));
        // One image index: this machine's platform (run here) and the other one.
        for (const arch of ["amd64", "arm64"]) {
          const platform = lines.find((l) => l.startsWith(`image: linux/${arch}:`)) ?? "";
          report(platform);
          const mb = Number(/([\d.]+) MB uncompressed/.exec(platform)?.[1]);
          assert.ok(mb > 0 && mb * 1e6 < MAX_IMAGE_BYTES, platform);
        }
      });

      await t.step("ctr images import puts it into the k8s.io namespace", async () => {
        const toml = await Deno.readTextFile(`${STATE}/containerd.toml`);
        const snapshotter = /snapshotter = "(\w+)"/.exec(toml)?.[1] ?? "overlayfs";
        const imported = await run("ctr", [
          "--address",
          SOCKET!,
          "--namespace",
          "k8s.io",
          "images",
          "import",
          "--snapshotter",
          snapshotter,
          `${REPO}dist/pods-api-image.tar`,
        ]);
        assert.equal(imported.code, 0, imported.stderr);
        assert.match(
          imported.stdout + imported.stderr,
          new RegExp(`unpacking ${pod.container.image}`),
        );
      });

      // A pod of this node's, for the daemon to find.
      const other = await runKubeletPod(kubelet, {
        name: "neighbour",
        namespace: "e2e",
        uid: `neighbour-${uid}`,
        labels: { app: "neighbour" },
        containers: [{ name: "app", image: BUSYBOX, command: ["sleep", "3600"] }],
      });
      sandboxes.push(other.sandboxId);

      await t.step("the DaemonSet's pod starts through CRI", async () => {
        const { podSandboxId } = await kubelet.runPodSandbox({ config: pod.sandbox });
        sandboxes.push(podSandboxId);
        // The init containers first, each to a successful exit, as the kubelet runs them.
        for (const init of pod.inits) {
          const { containerId: initId } = await kubelet.createContainer({
            podSandboxId,
            config: init.config,
            sandboxConfig: pod.sandbox,
          });
          await kubelet.startContainer({ containerId: initId });
          const exited = await pollFor(`init container ${init.container.name} exits`, async () => {
            const { status } = await kubelet.containerStatus({ containerId: initId });
            return status?.state === CONTAINER_STATE.exited ? status : undefined;
          });
          const log = await Deno.readTextFile(
            `${pod.sandbox.logDirectory}/${init.config.logPath}`,
          ).catch(() => "");
          assert.equal(exited.exitCode, 0, `${init.container.name} failed:\n${log}`);
          // It had Deno read the bundle's imports into the volume the daemon reads them from.
          const denoDir = init.container.env?.find((e) => e.name === "DENO_DIR")?.value;
          const mount = init.container.volumeMounts.find((m) => m.mountPath === denoDir);
          if (mount !== undefined) {
            const cache = await Deno.stat(`${pod.volumeSources[mount.name]}/dep_analysis_cache_v2`);
            assert.ok(cache.isFile && cache.size > 0, "Deno's module analysis is in DENO_DIR");
          }
        }
        const created = await kubelet.createContainer({
          podSandboxId,
          config: pod.config,
          sandboxConfig: pod.sandbox,
        });
        containerId = created.containerId;
        await kubelet.startContainer({ containerId });
        logFile = `${pod.sandbox.logDirectory}/${pod.config.logPath}`;
      });

      const base = `http://127.0.0.1:${metricsPort}`;
      await t.step("/healthz answers and /readyz turns ready", async () => {
        const seen = new Set<string>();
        await pollFor("/readyz ok", async () => {
          const { status } = await kubelet.containerStatus({ containerId: containerId! });
          if (status?.state === CONTAINER_STATE.exited) {
            const log = await Deno.readTextFile(logFile).catch(() => "");
            throw new Error(`the daemon exited with ${status.exitCode}:\n${log}`);
          }
          const r = await get(`${base}/readyz`);
          if (r) seen.add(`${r.status} ${r.body.trim()}`);
          return r?.status === 200 ? r : undefined;
        });
        report(`/readyz answers seen: ${[...seen].join(" | ")}`);
        assert.deepEqual(await get(`${base}/healthz`), { status: 200, body: "ok\n" });
      });

      await t.step("ListPods from outside lists the pods containerd runs", async () => {
        const listed = await listOn(apiSocket, "json");
        assert.equal(listed.code, 0, listed.stderr);
        const { items } = JSON.parse(listed.stdout) as {
          items: {
            metadata: { uid: string; name: string; namespace: string };
            spec: { nodeName: string; hostNetwork?: boolean };
            status: { phase: string; containerStatuses?: { state: { running?: unknown } }[] };
          }[];
        };
        const byUid = new Map(items.map((p) => [p.metadata.uid, p]));
        const neighbour = byUid.get(`neighbour-${uid}`);
        assert.ok(neighbour, `ListPods has the neighbour pod: ${[...byUid.keys()]}`);
        assert.equal(neighbour.metadata.name, "neighbour");
        assert.equal(neighbour.spec.nodeName, "real-node", "--hostname-override=$(NODE_NAME)");
        assert.equal(neighbour.status.phase, "Running");
        assert.ok(neighbour.status.containerStatuses?.[0]?.state.running);
        const self = byUid.get(uid);
        assert.ok(self, "ListPods has the daemon's own pod");
        assert.equal(self.metadata.namespace, "kube-system");
        const info = await Deno.lstat(apiSocket);
        assert.ok(info.isSocket);
        assert.equal(info.mode! & 0o777, 0o660);
      });

      await t.step(
        "the kubelet's Pods API path answers v1alpha1.Pods while no kubelet does",
        async () => {
          const listed = await listOn(compatSocket, "name");
          assert.equal(listed.code, 0, listed.stderr);
          assert.match(listed.stdout, /pod\/neighbour\n/);
        },
      );

      await t.step("containerd ran what deploy/base/daemonset.yaml describes", async (s) => {
        const verbose = await kubelet.containerStatus({ containerId: containerId!, verbose: true });
        const parsed = (JSON.parse(verbose.info?.info ?? "{}") as { runtimeSpec?: OciSpec })
          .runtimeSpec;
        assert.ok(parsed, "containerd reports the OCI spec");
        const spec: OciSpec = parsed;
        const c = pod.container;
        await s.step("command: the image's entrypoint, then the manifest's args", () => {
          assert.equal(c.command, undefined, "the manifest keeps the image's entrypoint");
          const expected = pod.manifestArgs.map((a) =>
            pod.substitutions.find(([from]) => from === a)?.[1] ?? a
          );
          assert.deepEqual(spec.process.args, [...imageEntrypoint(), ...expected]);
          assert.equal(spec.process.args[0], IMAGE_PATHS.deno);
          // Only the metrics port was changed (9469 may be taken on a test machine).
          assert.ok(
            pod.substitutions.every(([from]) => from.startsWith("--metrics-bind-address=")),
          );
        });
        await s.step("env from the manifest", () => {
          for (const e of c.env ?? []) {
            // A value as written (DENO_V8_FLAGS), or the node's name from the downward API.
            const value = e.value ??
              (e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName" ? "real-node" : undefined);
            assert.ok(value !== undefined, `${e.name}: a value or spec.nodeName`);
            assert.ok(spec.process.env.includes(`${e.name}=${value}`), e.name);
          }
        });
        await s.step("securityContext", () => {
          const sc = c.securityContext;
          assert.equal(spec.process.user.uid, sc.runAsUser);
          assert.equal(spec.process.user.gid, sc.runAsGroup);
          assert.equal(spec.root.readonly === true, sc.readOnlyRootFilesystem === true);
          assert.equal(
            spec.process.noNewPrivileges === true,
            sc.allowPrivilegeEscalation === false,
          );
          const caps = (sc.capabilities?.add ?? []).map((cap) => `CAP_${cap}`).sort();
          assert.deepEqual([...(spec.process.capabilities.bounding ?? [])].sort(), caps);
          assert.deepEqual([...(spec.process.capabilities.effective ?? [])].sort(), caps);
          assert.ok(spec.linux.seccomp, "a seccomp profile (RuntimeDefault) is applied");
        });
        await s.step("mounts: each volumeMount at its path, read-only as marked", () => {
          const volumes = doc.spec.template.spec.volumes;
          for (const m of c.volumeMounts) {
            const mount = spec.mounts.find((x) => x.destination === m.mountPath);
            assert.ok(mount, `${m.mountPath} is mounted`);
            assert.equal(mount.source, pod.volumeSources[m.name]);
            const volume = volumes.find((v) => v.name === m.name)!;
            if (volume.hostPath) {
              assert.equal(pod.hostPaths[volume.hostPath.path], mount.source);
            }
            assert.equal(mount.options?.includes("ro") === true, m.readOnly === true, m.mountPath);
          }
        });
        await s.step("host network, as hostNetwork: true", async () => {
          // The container joins its sandbox's network namespace: the node's.
          const net = spec.linux.namespaces.find((n) => n.type === "network");
          // (Deno reads /proc links only with --allow-all: ask readlink.)
          const link = async (path: string) => (await run("readlink", [path])).stdout.trim();
          const joined = net?.path === undefined ? undefined : await link(net.path);
          const host = await link("/proc/self/ns/net");
          assert.match(host, /^net:\[\d+\]$/);
          assert.equal(joined === host, doc.spec.template.spec.hostNetwork === true);
        });
      });

      await t.step("StopContainer stops it cleanly: exit 0, socket removed", async () => {
        const grace = doc.spec.template.spec.terminationGracePeriodSeconds ?? 30;
        await kubelet.stopContainer({ containerId: containerId!, timeout: grace });
        const { status } = await kubelet.containerStatus({ containerId: containerId! });
        const log = await Deno.readTextFile(logFile);
        assert.equal(status?.state, CONTAINER_STATE.exited);
        assert.equal(status?.exitCode, 0, log);
        assert.equal(status?.reason, "Completed");
        assert.equal(await exists(apiSocket), false, "the socket is removed");
        assert.equal(await exists(compatSocket), false, "the compatibility socket too");
        assert.match(log, /"msg":"shutting down".*"SIGTERM"/);
        assert.match(log, /"msg":"stopped"/);
        assert.doesNotMatch(log, /"level":"error"/);
      });
    } catch (err) {
      if (logFile !== "") {
        report(`daemon log:\n${await Deno.readTextFile(logFile).catch(() => "(none)")}`);
      }
      throw err;
    } finally {
      for (const id of sandboxes) await removeKubeletPod(kubelet, id).catch(() => {});
      kubelet.close();
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});
