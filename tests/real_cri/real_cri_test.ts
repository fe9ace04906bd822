/**
 * End-to-end test against a real containerd (started by
 * `scripts/real_cri/up.sh`): creates pods over CRI exactly as the kubelet
 * would (its labels, annotations, attempts) and checks what
 * {@linkcode CriPodSource} makes of them.
 *
 * Runs only when `PODS_API_REAL_CRI_SOCKET` names the containerd socket (as
 * root); `PODS_API_REAL_CRI_STATE` is up.sh's state directory (default:
 * `<socket dir>/state`). `scripts/real_cri/run_test.sh` does all of it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodSnapshot } from "../../src/model/pod.ts";
import {
  type KubeletContainerSpec,
  type KubeletPodSpec,
  removeKubeletPod,
  runKubeletPod,
  startKubeletContainer,
} from "../../src/sim/cri_kubelet.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { SourceUnavailableError } from "../../src/sources/mod.ts";

const SOCKET = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
const STATE = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
const UP_SCRIPT = new URL("../../scripts/real_cri/up.sh", import.meta.url).pathname;
const BUSYBOX = "localhost/real-cri/busybox:1";
/** Bound of every wait: generous for a loaded CI machine; typical waits are < 2 s. */
const DEADLINE_MS = 60_000;

interface ContainerView {
  name: string;
  state: { running?: JsonObject; waiting?: JsonObject; terminated?: JsonObject };
  lastState: { terminated?: JsonObject };
  restartCount: number;
  containerID: string;
  ready: boolean;
}

function containers(snapshot: PodSnapshot | undefined): ContainerView[] {
  return (snapshot?.pod.status?.containerStatuses ?? []) as unknown as ContainerView[];
}

async function poll<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

Deno.test({
  name: "CriPodSource reads a real containerd as the kubelet's pods",
  ignore: SOCKET === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const client = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const source = new CriPodSource({
      runtime: client,
      nodeName: "real-node",
      hostIPs: ["192.0.2.10"],
      callTimeoutMs: 5_000,
    });
    const run = crypto.randomUUID().slice(0, 8);
    const sandboxes: string[] = [];
    const pod = (name: string): KubeletPodSpec => ({
      name: `${name}-${run}`,
      namespace: "e2e",
      uid: `${name}-${run}-uid`,
      labels: { app: name },
      annotations: { "kubernetes.io/config.source": "api" },
      terminationGracePeriodSeconds: 1,
      logRoot: `${STATE}/pod-logs`,
    });
    const start = async (spec: KubeletPodSpec, container: KubeletContainerSpec) => {
      const handle = await runKubeletPod(client, { ...spec, containers: [container] });
      sandboxes.push(handle.sandboxId);
      return handle;
    };
    const find = async (uid: string) =>
      (await source.list(AbortSignal.timeout(30_000))).find((p) => p.uid === uid);

    const web = pod("web");
    const exit7 = pod("exit7");
    const oom = pod("oom");
    const restart = pod("restart");
    try {
      const version = await client.version();
      assert.equal(version.runtimeName, "containerd");

      await t.step("a running pod has its pod IP and a Running container", async () => {
        await start(web, {
          name: "app",
          image: BUSYBOX,
          command: ["sleep", "3600"],
          ports: [{ containerPort: 8080, name: "http" }],
        });
        const snap = await poll("web running", async () => {
          const s = await find(web.uid);
          return containers(s)[0]?.state.running !== undefined && s?.pod.status?.podIP
            ? s
            : undefined;
        });
        assert.equal(snap.pod.metadata.name, web.name);
        assert.equal(snap.pod.metadata.namespace, "e2e");
        assert.deepEqual(snap.pod.metadata.labels, { app: "web" });
        assert.deepEqual(snap.pod.metadata.annotations, { "kubernetes.io/config.source": "api" });
        assert.match(String(snap.pod.status?.podIP), /^10\.88\./);
        assert.equal(snap.pod.status?.phase, "Running");
        assert.equal(snap.pod.spec?.terminationGracePeriodSeconds, 1);
        const [app] = containers(snap);
        assert.equal(app?.ready, true);
        assert.match(String(app?.containerID), /^containerd:\/\/[0-9a-f]{64}$/);
        const [specContainer] = snap.pod.spec?.containers as JsonObject[];
        assert.deepEqual(specContainer?.ports, [
          { name: "http", containerPort: 8080, protocol: "TCP" },
        ]);
      });

      await t.step(
        "a container that exits 7 is Terminated with exit code 7, reason Error",
        async () => {
          await start(exit7, { name: "app", image: BUSYBOX, command: ["sh", "-c", "exit 7"] });
          const terminated = await poll(
            "exit 7",
            async () => containers(await find(exit7.uid))[0]?.state.terminated,
          );
          assert.equal(terminated.exitCode, 7);
          assert.equal(terminated.reason, "Error");
          assert.ok(terminated.finishedAt);
        },
      );

      await t.step("a container over its memory limit is OOMKilled", async () => {
        await start(oom, {
          name: "hog",
          image: BUSYBOX,
          memoryLimitBytes: 32 * 1024 * 1024,
          // The shell doubles a string until the cgroup's limit kills it.
          command: ["sh", "-c", "x=0123456789abcdef; while :; do x=$x$x; done"],
        });
        const terminated = await poll(
          "OOM kill",
          async () => containers(await find(oom.uid))[0]?.state.terminated,
        );
        assert.equal(terminated.reason, "OOMKilled");
        assert.equal(terminated.exitCode, 137);
      });

      await t.step(
        "a restarted container (attempt 1) has restartCount 1 and lastState",
        async () => {
          const handle = await start(restart, {
            name: "app",
            image: BUSYBOX,
            command: ["sh", "-c", "exit 3"],
          });
          await poll(
            "attempt 0 exit",
            async () => containers(await find(restart.uid))[0]?.state.terminated,
          );
          await startKubeletContainer(client, handle.sandboxId, {
            pod: restart,
            container: { name: "app", image: BUSYBOX, command: ["sleep", "3600"] },
            attempt: 1,
          });
          const app = await poll("attempt 1 running", async () => {
            const c = containers(await find(restart.uid))[0];
            return c?.state.running !== undefined ? c : undefined;
          });
          assert.equal(app.restartCount, 1);
          assert.equal(app.lastState.terminated?.exitCode, 3);
          assert.equal(app.lastState.terminated?.reason, "Error");
        },
      );

      await t.step("a removed pod disappears", async () => {
        const sandboxId = sandboxes.splice(1, 1)[0]!;
        await removeKubeletPod(client, sandboxId);
        await poll(
          "exit7 gone",
          async () => (await find(exit7.uid)) === undefined ? true : undefined,
        );
      });

      await t.step("containerd killed and restarted: errors, then the same pods", async () => {
        const expected = [web.uid, oom.uid, restart.uid];
        const before = new Map(
          (await source.list(AbortSignal.timeout(30_000))).map((p) => [p.uid, p]),
        );
        for (const uid of expected) assert.ok(before.has(uid), uid);

        const results: ({ ok: true; uids: Set<string> } | { ok: false; reason: string })[] = [];
        let stop = false;
        const relist = (async () => {
          while (!stop) {
            try {
              const pods = await source.list(AbortSignal.timeout(10_000));
              results.push({ ok: true, uids: new Set(pods.map((p) => p.uid)) });
            } catch (err) {
              assert.ok(err instanceof SourceUnavailableError, String(err));
              results.push({ ok: false, reason: err.reason });
            }
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();

        const pid = Number((await Deno.readTextFile(`${STATE}/containerd.pid`)).trim());
        Deno.kill(pid, "SIGKILL");
        await poll(
          "a failed relist",
          () => Promise.resolve(results.some((r) => !r.ok) || undefined),
        );
        const up = await new Deno.Command("bash", {
          args: [UP_SCRIPT, SOCKET!, STATE],
          env: { REAL_CRI_SKIP_APT: "1" },
          stdout: "null",
          stderr: "inherit",
        }).output();
        assert.equal(up.code, 0, "up.sh restarted containerd");
        const failures = results.length;
        await poll(
          "a relist after the restart",
          () => Promise.resolve(results.slice(failures).some((r) => r.ok) || undefined),
        );
        stop = true;
        await relist;

        const reasons = new Set(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason));
        assert.ok(reasons.has("unavailable"), [...reasons].join());
        for (const r of results) {
          if (r.ok) {
            for (const uid of expected) assert.ok(r.uids.has(uid), `${uid} never vanished`);
          }
        }
        const after = await find(web.uid);
        const [app] = containers(after);
        assert.ok(app?.state.running, "the container kept running");
        assert.equal(app?.containerID, containers(before.get(web.uid))[0]?.containerID);
        assert.equal(after?.pod.status?.podIP, before.get(web.uid)?.pod.status?.podIP);
      });
    } finally {
      for (const id of sandboxes) await removeKubeletPod(client, id).catch(() => {});
      client.close();
    }
  },
});
