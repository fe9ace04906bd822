/**
 * The kubelet's Pods API merged with a real containerd: a fake kubelet
 * (tests/_support/fake_kubelet_podsapi_server.py, in its own process) gives
 * a pod's full spec and the kubelet's status; containerd runs the pod's real
 * sandbox and container. The daemon serves the kubelet's spec, and, once the
 * kubelet is gone and the runtime shows a change, a status rebuilt from the
 * real runtime: the sandbox's IP, the container's image digest, start, exit
 * code and end as containerd reports them, none of which the kubelet's status
 * held.
 *
 * Runs only when `PODS_API_REAL_CRI_SOCKET` names the containerd socket (as
 * root); `scripts/real_cri/run_test.sh` starts one. Run it under
 * `flock /tmp/real-cri.lock`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { createLogger, silentLogger } from "../../src/log.ts";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { removeKubeletPod, runKubeletPod } from "../../src/sim/runtime/cri_kubelet.ts";
import { CONTAINER_STATE, CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { KubeletPodsApiSource } from "../../src/sources/kubelet_podsapi/mod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { FAKE_KUBELET_PEER, startFakeKubeletPodsApi } from "../_support/fake_kubelet_podsapi.ts";
import { poll } from "../_support/poll.ts";

const SOCKET = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
const STATE = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
const BUSYBOX = "localhost/real-cri/busybox:1";
const DEADLINE_MS = 60_000;

interface ContainerView {
  name: string;
  containerID?: string;
  imageID?: string;
  state?: { running?: JsonObject; terminated?: JsonObject };
}

/** A CRI time (ns since the epoch) as a pod status carries it: RFC 3339, whole seconds. */
function statusTime(ns: number): string {
  return new Date(Math.floor(ns / 1e9) * 1000).toISOString().replace(".000Z", "Z");
}

function containerOf(pod: PodObject | undefined): ContainerView | undefined {
  return (pod?.status?.containerStatuses as ContainerView[] | undefined)?.[0];
}

Deno.test({
  name: FAKE_KUBELET_PEER.name(
    "The kubelet Pods API's spec merges with a status the daemon rebuilds from a real containerd",
  ),
  ignore: SOCKET === undefined || FAKE_KUBELET_PEER.ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const run = crypto.randomUUID().slice(0, 8);
    const name = `merged-${run}`;
    const uid = `merged-${run}-uid`;
    const cri = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const runtime = new CriClient(SOCKET!);
    const dir = await Deno.makeTempDir({ dir: STATE, prefix: "kubelet-podsapi-" });
    const kubeletPath = `${dir}/pods-api.sock`;
    const kubelet = await startFakeKubeletPodsApi(kubeletPath);
    const podsApi = new KubeletPodsApiSource({
      endpoint: kubeletPath,
      log: silentLogger,
      retryInitialMs: 10,
      retryMaxMs: 100,
    });
    const criSource = new CriPodSource({
      runtime,
      nodeName: "real-node",
      hostIPs: ["192.0.2.10"],
      callTimeoutMs: 5_000,
      log: createLogger({ level: "error" }),
    });
    const h = await startHarness({ sources: [criSource, podsApi] });
    let sandboxId: string | undefined;
    try {
      // The runtime runs the pod as the kubelet would.
      const handle = await runKubeletPod(cri, {
        name,
        namespace: "e2e",
        uid,
        labels: { app: "merged" },
        annotations: { "kubernetes.io/config.source": "api" },
        terminationGracePeriodSeconds: 1,
        logRoot: `${STATE}/pod-logs`,
        containers: [{ name: "app", image: BUSYBOX, command: ["sleep", "3600"] }],
      });
      sandboxId = handle.sandboxId;
      const containerId = handle.containerIds.app!;
      // The kubelet's view of it: what CRI cannot carry, and its own status.
      const spec: PodObject = {
        metadata: {
          uid,
          name,
          namespace: "e2e",
          labels: { app: "merged" },
          annotations: { "kubernetes.io/config.source": "api" },
          creationTimestamp: "2026-12-01T00:00:00Z",
          ownerReferences: [{
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "merged-rs",
            uid: `rs-${run}`,
            controller: true,
          }],
        },
        spec: {
          nodeName: "real-node",
          serviceAccountName: "merged-sa",
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: "app",
            image: BUSYBOX,
            command: ["sleep", "3600"],
            resources: { limits: { memory: "64Mi" } },
          }],
        },
        status: {
          phase: "Running",
          conditions: [{ type: "Ready", status: "True" }],
          containerStatuses: [{
            name: "app",
            image: BUSYBOX,
            imageID: "",
            containerID: `containerd://${containerId}`,
            ready: true,
            restartCount: 0,
            started: true,
            state: { running: { startedAt: "2026-12-01T00:00:01Z" } },
          }],
        },
      };
      await kubelet.set([spec]);
      const served = () => h.daemon.cache.get(uid)?.pod;

      await t.step("while the kubelet answers: its spec and its status", async () => {
        await poll(async () => {
          await h.daemon.relistOnce();
          return podsApi.state === "live" && served() ? true : undefined;
        }, { what: "the merged pod", timeoutMs: DEADLINE_MS });
        const pod = served()!;
        assert.deepEqual(pod.metadata.ownerReferences, spec.metadata.ownerReferences);
        assert.equal(pod.spec?.serviceAccountName, "merged-sa");
        // The kubelet's status is its word, served as it is: nothing of the runtime's in it.
        assert.deepEqual(pod.status, spec.status);
        const found = h.daemon.query.lookup({ kind: "containerId", id: containerId });
        assert.equal(found?.pod.uid, uid, "the real container ID finds the pod");
      });

      await t.step(
        "the kubelet gone and the container stopped: the real exit, the kubelet's spec",
        async () => {
          await kubelet.kill();
          await poll(() => podsApi.state === "down" ? true : undefined, {
            what: "the kubelet seen down",
            timeoutMs: DEADLINE_MS,
          });
          await cri.stopContainer({ containerId, timeout: 0 });
          await poll(async () => {
            const { status } = await cri.containerStatus({ containerId });
            return status?.state === CONTAINER_STATE.exited ? true : undefined;
          }, { what: "the container exited (per the runtime)", timeoutMs: DEADLINE_MS });
          const pod = await poll(async () => {
            await h.daemon.relistOnce();
            const p = served();
            return containerOf(p)?.state?.terminated ? p : undefined;
          }, { what: "the exit served", timeoutMs: DEADLINE_MS });
          // What the daemon rebuilt, compared with what containerd itself reports now.
          const { status: real } = await cri.containerStatus({ containerId });
          const { status: sandbox } = await cri.podSandboxStatus({ podSandboxId: sandboxId! });
          assert.ok(real && sandbox?.network?.ip, "the runtime reports the container and pod IP");
          const container = containerOf(pod)!;
          assert.equal(container.containerID, `containerd://${containerId}`);
          assert.equal(pod.status?.podIP, sandbox.network.ip, "the sandbox's IP");
          assert.notEqual(real.imageRef, "");
          assert.equal(container.imageID, real.imageRef, "the image the runtime ran");
          assert.deepEqual(container.state?.terminated, {
            exitCode: real.exitCode,
            reason: real.reason,
            startedAt: statusTime(real.startedAt),
            finishedAt: statusTime(real.finishedAt),
            containerID: `containerd://${containerId}`,
          });
          assert.deepEqual(pod.metadata.ownerReferences, spec.metadata.ownerReferences);
          assert.equal(
            pod.spec?.serviceAccountName,
            "merged-sa",
            "the spec is still the kubelet's",
          );
          assert.equal(pod.status?.phase, "Failed", "restartPolicy Never from the kubelet's spec");
          const readyz = await h.http("/readyz");
          assert.match(readyz.body, /degraded: kubelet Pods API at .* is not answering/);
        },
      );
    } finally {
      if (sandboxId !== undefined) await removeKubeletPod(cri, sandboxId).catch(() => {});
      await h[Symbol.asyncDispose]();
      podsApi.close();
      await podsApi.closed();
      await kubelet[Symbol.asyncDispose]();
      cri.close();
      runtime.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
