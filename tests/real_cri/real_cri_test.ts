/**
 * End-to-end test against a real containerd (started by
 * `scripts/real_cri/up.sh`): creates pods over CRI exactly as the kubelet
 * would (its labels, annotations, attempts) and checks what the daemon serves
 * of them over its gRPC API (ListPods, GetPod, WatchPods of `v1alpha1.Pods`).
 *
 * The daemon runs as in production (the real {@linkcode CriClient} and
 * {@linkcode CriPodSource}) except that its relist loop is driven here:
 * each `relistOnce()` is one relist period. That makes "within two relist
 * periods" countable: once an action is done (or the runtime itself reports
 * its outcome), the daemon must show it after at most two relists.
 *
 * Runs only when `PODS_API_REAL_CRI_SOCKET` names the containerd socket (as
 * root); `PODS_API_REAL_CRI_STATE` is up.sh's state directory (default:
 * `<socket dir>/state`). `scripts/real_cri/run_test.sh` does all of it.
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import { dirname } from "node:path";
import { createLogger } from "../../src/log.ts";
import type { JsonObject } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { decodePod } from "../../src/proto/mod.ts";
import {
  type KubeletContainerSpec,
  type KubeletPodHandle,
  type KubeletPodSpec,
  removeKubeletPod,
  runKubeletPod,
  startKubeletContainer,
} from "../../src/sim/runtime/cri_kubelet.ts";
import { CONTAINER_STATE, CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import {
  callUnary,
  type Harness,
  startHarness,
  watch,
  type WatchRecorder,
} from "../_support/daemon_harness.ts";
import { poll } from "../_support/poll.ts";

const SOCKET = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
/** The first two octets of up.sh's pod subnet (`REAL_CRI_SUBNET`, 10.88.0.0/16 by default). */
const SUBNET_PREFIX = (Deno.env.get("REAL_CRI_SUBNET") ?? "10.88.0.0/16").split(".").slice(0, 2)
  .join(".") + ".";
const STATE = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
const UP_SCRIPT = new URL("../../scripts/real_cri/up.sh", import.meta.url).pathname;
const BUSYBOX = "localhost/real-cri/busybox:1";
/** Bound of every wait: generous for a loaded CI machine; typical waits are < 2 s. */
const DEADLINE_MS = 60_000;
/** Pause between two polls. */
const POLL_MS = 50;
/** The bound: a change shows within two relist periods. */
const MAX_RELISTS = 2;

interface ContainerView {
  name: string;
  state: { running?: JsonObject; waiting?: JsonObject; terminated?: JsonObject };
  lastState: { terminated?: JsonObject };
  restartCount?: number;
  containerID: string;
  ready?: boolean;
}

interface WatchEvent {
  type: string;
  uid: string | undefined;
  pod: PodObject | undefined;
}

function containers(pod: PodObject | undefined): ContainerView[] {
  return (pod?.status?.containerStatuses ?? []) as unknown as ContainerView[];
}

/** Writes a line to stderr (deno test shows it under the step). */
function report(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `fn` every {@linkcode POLL_MS} until it returns a value, up to {@linkcode DEADLINE_MS}. */
function pollFor<T>(what: string, fn: () => Promise<T | undefined>): Promise<T> {
  return poll(fn, { what, timeoutMs: DEADLINE_MS, intervalMs: POLL_MS });
}

/** The pods ListPods answers, by UID. */
async function listPods(h: Harness): Promise<Map<string, PodObject>> {
  const res = await callUnary<{ pods?: Buffer[] }>(h.v1alpha1, "ListPods", {});
  if (!res.ok) throw new Error(`ListPods failed: ${res.code} ${res.details}`);
  const pods = (res.value.pods ?? []).map((b) => decodePod(b));
  return new Map(pods.map((p) => [String(p.metadata.uid), p]));
}

/**
 * Relists once per poll until `check` (reading the daemon's API) returns a
 * value; fails when that takes more than {@linkcode MAX_RELISTS} relists.
 */
async function withinTwoRelists<T>(
  h: Harness,
  what: string,
  check: (pods: Map<string, PodObject>) => T | undefined,
): Promise<T> {
  let relists = 0;
  const value = await pollFor(what, async () => {
    assert.equal(await h.daemon.relistOnce(), true, `a relist while waiting for ${what}`);
    relists++;
    return check(await listPods(h));
  });
  report(`${what}: ${relists} relist(s)`);
  assert.ok(relists <= MAX_RELISTS, `${what} took ${relists} relists`);
  return value;
}

function decodeEvents(w: WatchRecorder, from = 0): WatchEvent[] {
  return (w.messages.slice(from) as { type: string; pod?: Buffer }[]).map((m) => {
    const pod = m.pod && m.pod.length > 0 ? decodePod(m.pod) : undefined;
    return { type: m.type, uid: pod?.metadata.uid as string | undefined, pod };
  });
}

/** Waits (without relisting) until the watch delivered an event matching `match`. */
function watched(
  w: WatchRecorder,
  what: string,
  match: (e: WatchEvent) => boolean,
): Promise<WatchEvent> {
  return pollFor(`watch event: ${what}`, () => Promise.resolve(decodeEvents(w).find(match)));
}

async function isOpen(w: WatchRecorder): Promise<boolean> {
  const open = Symbol("open");
  return (await Promise.race([w.ended, Promise.resolve(open)])) === open;
}

Deno.test({
  name: "startDaemon() behaviour: serves a real containerd's pods over the gRPC API",
  ignore: SOCKET === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    // The test plays the kubelet on one connection; the daemon has its own.
    const kubelet = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const runtime = new CriClient(SOCKET!);
    const logLines: string[] = [];
    const source = new CriPodSource({
      runtime,
      nodeName: "real-node",
      hostIPs: ["192.0.2.10"],
      callTimeoutMs: 5_000,
      log: createLogger({ level: "debug", write: (line) => logLines.push(line) }),
    });
    const h = await startHarness({
      sources: [source],
      flags: ["--rate-limit-burst", "100000", "--rate-limit-qps", "100000"],
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
    const start = async (
      spec: KubeletPodSpec,
      container: KubeletContainerSpec,
    ): Promise<KubeletPodHandle> => {
      const handle = await runKubeletPod(kubelet, { ...spec, containers: [container] });
      sandboxes.push(handle.sandboxId);
      return handle;
    };
    /**
     * Polls the runtime itself until the container has exited (with `reason`,
     * when given: containerd may record an OOM kill just after the exit).
     */
    const exited = (containerId: string, reason?: string) =>
      pollFor(`container ${containerId} exited ${reason ?? ""} (per the runtime)`, async () => {
        const { status } = await kubelet.containerStatus({ containerId });
        const done = status?.state === CONTAINER_STATE.exited &&
          (reason === undefined || status.reason === reason);
        return done ? status : undefined;
      });

    const web = pod("web");
    const exit7 = pod("exit7");
    const oom = pod("oom");
    const restart = pod("restart");
    let w: WatchRecorder | undefined;
    try {
      assert.equal((await kubelet.version()).runtimeName, "containerd");
      assert.equal(await h.daemon.relistOnce(), true, "the first relist");
      w = watch(h.v1alpha1);
      const stream = w;
      await watched(stream, "initial sync", (e) => e.type === "INITIAL_SYNC_COMPLETE");

      await t.step("a running pod has its pod IP and a Running container", async () => {
        await start(web, {
          name: "app",
          image: BUSYBOX,
          command: ["sleep", "3600"],
          ports: [{ containerPort: 8080, name: "http" }],
        });
        const listed = await withinTwoRelists(h, "web running with a pod IP", (pods) => {
          const p = pods.get(web.uid);
          return containers(p)[0]?.state.running !== undefined && p?.status?.podIP ? p : undefined;
        });
        assert.equal(listed.metadata.name, web.name);
        assert.equal(listed.metadata.namespace, "e2e");
        assert.deepEqual(listed.metadata.labels, { app: "web" });
        assert.deepEqual(listed.metadata.annotations, { "kubernetes.io/config.source": "api" });
        assert.ok(
          String(listed.status?.podIP).startsWith(SUBNET_PREFIX),
          `pod IP ${listed.status?.podIP} in ${SUBNET_PREFIX}*`,
        );
        assert.equal(listed.status?.phase, "Running");
        assert.equal(listed.spec?.nodeName, "real-node");
        assert.equal(listed.spec?.terminationGracePeriodSeconds, 1);
        const [app] = containers(listed);
        assert.equal(app?.name, "app");
        assert.equal(app?.ready, true);
        assert.match(String(app?.containerID), /^containerd:\/\/[0-9a-f]{64}$/);
        const [specContainer] = listed.spec?.containers as JsonObject[];
        assert.deepEqual(specContainer?.ports, [
          { name: "http", containerPort: 8080, protocol: "TCP" },
        ]);

        const got = await callUnary<{ pod?: Buffer }>(h.v1alpha1, "GetPod", { podUID: web.uid });
        assert.ok(got.ok, "GetPod answers");
        assert.deepEqual(decodePod(got.value.pod!), listed);
        const added = await watched(stream, "web ADDED", (e) => e.uid === web.uid);
        assert.equal(added.type, "ADDED");
        await watched(
          stream,
          "web running on the watch",
          (e) => e.uid === web.uid && containers(e.pod)[0]?.state.running !== undefined,
        );
      });

      await t.step(
        "a container that exits 7 is Terminated with exit code 7, reason Error",
        async () => {
          const handle = await start(exit7, {
            name: "app",
            image: BUSYBOX,
            command: ["sh", "-c", "exit 7"],
          });
          await exited(handle.containerIds.app!);
          const terminated = await withinTwoRelists(
            h,
            "exit7 terminated",
            (pods) => containers(pods.get(exit7.uid))[0]?.state.terminated,
          );
          assert.equal(terminated.exitCode, 7);
          assert.equal(terminated.reason, "Error");
          assert.ok(terminated.finishedAt);
          await watched(
            stream,
            "exit7 terminated on the watch",
            (e) => e.uid === exit7.uid && containers(e.pod)[0]?.state.terminated?.exitCode === 7,
          );
        },
      );

      await t.step("a container over its memory limit is OOMKilled", async () => {
        const handle = await start(oom, {
          name: "hog",
          image: BUSYBOX,
          memoryLimitBytes: 32 * 1024 * 1024,
          // The shell doubles a string until the cgroup's limit kills it.
          command: ["sh", "-c", "x=0123456789abcdef; while :; do x=$x$x; done"],
        });
        await exited(handle.containerIds.hog!, "OOMKilled");
        const terminated = await withinTwoRelists(
          h,
          "oom terminated",
          (pods) => containers(pods.get(oom.uid))[0]?.state.terminated,
        );
        assert.equal(terminated.reason, "OOMKilled");
        assert.equal(terminated.exitCode, 137);
        await watched(
          stream,
          "oom OOMKilled on the watch",
          (e) =>
            e.uid === oom.uid && containers(e.pod)[0]?.state.terminated?.reason === "OOMKilled",
        );
      });

      await t.step(
        "a restarted container (attempt 1) has restartCount 1 and the old instance in lastState",
        async () => {
          const handle = await start(restart, {
            name: "app",
            image: BUSYBOX,
            command: ["sh", "-c", "exit 3"],
          });
          const first = handle.containerIds.app!;
          await exited(first);
          await withinTwoRelists(
            h,
            "attempt 0 exited",
            (pods) => containers(pods.get(restart.uid))[0]?.state.terminated,
          );
          const second = await startKubeletContainer(kubelet, handle.sandboxId, {
            pod: restart,
            container: { name: "app", image: BUSYBOX, command: ["sleep", "3600"] },
            attempt: 1,
          });
          const app = await withinTwoRelists(h, "attempt 1 running", (pods) => {
            const c = containers(pods.get(restart.uid))[0];
            return c?.state.running !== undefined ? c : undefined;
          });
          assert.equal(app.containerID, `containerd://${second}`);
          assert.equal(app.restartCount, 1);
          assert.equal(app.lastState.terminated?.exitCode, 3);
          assert.equal(app.lastState.terminated?.reason, "Error");
          assert.equal(app.lastState.terminated?.containerID, `containerd://${first}`);
          await watched(
            stream,
            "restart count 1 on the watch",
            (e) => e.uid === restart.uid && containers(e.pod)[0]?.restartCount === 1,
          );
        },
      );

      await t.step("a removed pod yields DELETED and leaves ListPods", async () => {
        const sandboxId = sandboxes.splice(1, 1)[0]!;
        await removeKubeletPod(kubelet, sandboxId);
        await withinTwoRelists(
          h,
          "exit7 gone from ListPods",
          (pods) => pods.has(exit7.uid) ? undefined : true,
        );
        await watched(stream, "exit7 DELETED", (e) => e.type === "DELETED" && e.uid === exit7.uid);
        const got = await callUnary(h.v1alpha1, "GetPod", { podUID: exit7.uid });
        assert.equal(got.ok ? grpc.status.OK : got.code, grpc.status.NOT_FOUND);
      });

      // SIGTERM: containerd stops gracefully (its gRPC server closes our
      // connection, with GOAWAY where its grpc-go sends one); SIGKILL: it dies.
      for (const signal of ["SIGTERM", "SIGKILL"] as const) {
        await t.step(
          `containerd stopped (${signal}) and restarted: no DELETED or ADDED, the watch stays connected`,
          async () => {
            const expected = [web.uid, oom.uid, restart.uid];
            const before = await listPods(h);
            for (const uid of expected) assert.ok(before.has(uid), uid);
            const mark = stream.messages.length;

            // Relist back to back as the PLEG would, through the whole outage.
            const results: { ok: boolean; at: number }[] = [];
            let stop = false;
            const relists = (async () => {
              while (!stop) {
                results.push({ ok: await h.daemon.relistOnce(), at: Date.now() });
                await pause(POLL_MS);
              }
            })();
            try {
              const pid = Number((await Deno.readTextFile(`${STATE}/containerd.pid`)).trim());
              const killedAt = Date.now();
              Deno.kill(pid, signal);
              await pollFor(
                "a failed relist",
                () => Promise.resolve(results.some((r) => !r.ok) || undefined),
              );

              // The runtime is gone: the last known pods are still served.
              const during = await listPods(h);
              assert.deepEqual([...during.keys()].sort(), [...before.keys()].sort());

              const up = await new Deno.Command("bash", {
                args: [UP_SCRIPT, SOCKET!, STATE],
                env: { REAL_CRI_SKIP_APT: "1" },
                stdout: "null",
                stderr: "inherit",
              }).output();
              assert.equal(up.code, 0, "up.sh restarted containerd");
              const upAt = Date.now();
              const recovered = await pollFor(
                "a relist after the restart",
                () => Promise.resolve(results.find((r) => r.ok && r.at > upAt)),
              );
              const settled = results.length;
              await pollFor(
                "two more relists",
                () => Promise.resolve(results.length >= settled + MAX_RELISTS || undefined),
              );
              report(
                `containerd down ${upAt - killedAt} ms (up.sh included); ` +
                  `first successful relist ${recovered.at - upAt} ms after up.sh returned`,
              );
            } finally {
              stop = true;
              await relists;
            }

            const outage = decodeEvents(stream, mark);
            report(`watch events during the outage: ${outage.map((e) => e.type).join() || "none"}`);
            const spurious = outage.filter((e) => e.type === "DELETED" || e.type === "ADDED");
            assert.deepEqual(spurious.map((e) => `${e.type} ${e.uid}`), []);
            assert.ok(await isOpen(stream), "the watch is still open");
            const metrics = (await h.http("/metrics")).body;
            assert.match(
              metrics,
              /pods_api_relist_errors_total\{[^}]*reason="unavailable"[^}]*\} [1-9]/,
            );

            const after = await listPods(h);
            assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
            const [app] = containers(after.get(web.uid));
            assert.ok(app?.state.running, "the container kept running");
            assert.equal(app?.containerID, containers(before.get(web.uid))[0]?.containerID);
            assert.equal(after.get(web.uid)?.status?.podIP, before.get(web.uid)?.status?.podIP);

            // The same watch sees what happens next.
            const later = pod(`later-${signal.toLowerCase()}`);
            await start(later, { name: "app", image: BUSYBOX, command: ["sleep", "3600"] });
            await withinTwoRelists(h, "later listed", (pods) => pods.get(later.uid));
            await watched(stream, "later ADDED", (e) => e.type === "ADDED" && e.uid === later.uid);
            assert.ok(await isOpen(stream), "the watch is still open");
          },
        );
      }
    } catch (err) {
      report(`daemon CRI source log:\n${logLines.join("\n")}`);
      throw err;
    } finally {
      w?.cancel();
      for (const id of sandboxes) await removeKubeletPod(kubelet, id).catch(() => {});
      await h[Symbol.asyncDispose]();
      runtime.close();
      kubelet.close();
    }
  },
});
