/**
 * Issue 17 as the operator saw it, against a real containerd (started by
 * `scripts/real_cri/up.sh`): static manifests beside the runtime, written and
 * removed 15 ms apart while pods start, exit and go in containerd, the
 * daemon running its own relist loops (manifests rescanned every 100 ms,
 * the runtime relisted every 100 ms and on each of its container events).
 * Every v1alpha1 event is checked as it arrives: per UID
 * ADDED (MODIFIED)* DELETED, none ahead of its cause, no MODIFIED of an
 * unchanged manifest; the stream ends where ListPods is.
 *
 * Runs only when `PODS_API_REAL_CRI_SOCKET` names the containerd socket (as
 * root); `scripts/real_cri/run_test.sh` does all of it.
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import { removeTree } from "../_support/remove_tree.ts";
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { systemClock } from "../../src/clock.ts";
import { createLogger } from "../../src/log.ts";
import type { PodObject } from "../../src/model/pod.ts";
import {
  type KubeletPodHandle,
  removeKubeletPod,
  runKubeletPod,
} from "../../src/sim/runtime/cri_kubelet.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { StaticPodSource } from "../../src/sources/static/mod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import {
  checkedWatch,
  churnCauses,
  ManifestChurn,
  pause,
  waitConverged,
  waitGateOpen,
} from "../_support/relist_churn.ts";
import { WatchSequenceChecker } from "../_support/watch_sequence.ts";

const SOCKET = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
const STATE = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
const BUSYBOX = "localhost/real-cri/busybox:1";
const NODE = "test-node";
/** The operator's run: 300 manifests. */
const MANIFESTS = 300;
const RUNTIME_PODS = 12;

Deno.test({
  name:
    "WatchPods as served keeps ADDED (MODIFIED)* DELETED per pod through manifest and containerd churn",
  ignore: SOCKET === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "relist-churn-real-" });
    await Deno.mkdir(`${dir}/manifests`);
    // The test plays the kubelet on one connection; the daemon has its own.
    const kubelet = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const runtime = new CriClient(SOCKET!);
    const staticLog: { level: string; msg: string }[] = [];
    const run = crypto.randomUUID().slice(0, 8);
    const handles: (KubeletPodHandle & { uid: string })[] = [];
    const done = { ran: new Set<string>(), removed: new Set<string>() };
    try {
      await using h = await startHarness({
        sources: [
          new StaticPodSource({
            dir: `${dir}/manifests`,
            nodeName: NODE,
            clock: systemClock,
            log: createLogger({ level: "info", write: (l) => staticLog.push(JSON.parse(l)) }),
            rescanMs: 100,
          }),
          new CriPodSource({ runtime, nodeName: NODE, callTimeoutMs: 5_000 }),
        ],
        clock: systemClock,
        runLoops: true,
        flags: ["--relist-period", "100ms", "--watch-queue-size", "100000"],
      });
      const manifests = new ManifestChurn(`${dir}/manifests`, NODE);
      const checker = new WatchSequenceChecker(churnCauses(manifests, done.removed));
      await waitGateOpen(h.daemon.gate);
      const stream = checkedWatch(h.v1alpha1, checker);
      // Pods of earlier runs in this containerd are not this test's business.
      const before = new Set(h.daemon.cache.list().map((p) => p.uid));

      const runtimeChurn = async () => {
        for (let i = 0; i < RUNTIME_PODS; i++) {
          const uid = `churn-${run}-${i}`;
          done.ran.add(uid);
          const handle = await runKubeletPod(kubelet, {
            name: `r-${i}`,
            namespace: `churn-${run}`,
            uid,
            terminationGracePeriodSeconds: 1,
            logRoot: `${STATE}/pod-logs`,
            containers: [{ name: "app", image: BUSYBOX, command: ["sleep", "3600"] }],
          });
          handles.push({ uid, ...handle });
        }
        for (const handle of handles.filter((_, i) => i % 2 === 0)) {
          await kubelet.stopContainer({ containerId: handle.containerIds["app"]!, timeout: 0 });
        }
        for (const handle of handles.filter((_, i) => i % 3 !== 0)) {
          done.removed.add(handle.uid);
          await removeKubeletPod(kubelet, handle.sandboxId);
        }
      };
      const manifestChurn = async () => {
        for (let i = 0; i < MANIFESTS; i++) await manifests.write(i);
        await pause(1500);
        // As the operator did: one by one, 15 ms apart.
        for (let i = 0; i < MANIFESTS; i++) {
          if (i % 4 === 3) continue;
          await manifests.unlink(i);
          await pause(15);
        }
      };
      await Promise.all([manifestChurn(), runtimeChurn()]);

      const expected = manifests.expected();
      for (const uid of done.ran) if (!done.removed.has(uid)) expected.add(uid);
      for (const uid of before) expected.add(uid);
      const keyOf = (pod: PodObject) =>
        manifests.owns(pod) ? `${pod.metadata.namespace}/${pod.metadata.name}` : pod.metadata.uid;
      await waitConverged(h.v1alpha1, checker, expected, keyOf, { timeoutMs: 60_000 });
      stream.cancel();
      assert.equal(await stream.ended, grpc.status.CANCELLED);
      assert.deepEqual(
        checker.violations.slice(0, 20),
        [],
        `the stream as served breaks no rule (${checker.violations.length} broken)`,
      );
      assert.deepEqual(staticLog.filter((l) => l.level === "warn"), [], "no manifest warning");
      const deleted = checker.deleted.map((pod) => manifests.owns(pod));
      assert.ok(deleted.includes(true), "the stream saw manifests' pods deleted");
      assert.ok(deleted.includes(false), "the stream saw containerd's pods deleted");
      Deno.stderr.writeSync(
        new TextEncoder().encode(
          `relist churn (containerd): ${checker.uids} pods, ${JSON.stringify(checker.counts)} ` +
            `events, ${checker.violations.length} sequence violations\n`,
        ),
      );
    } finally {
      for (const handle of handles) {
        if (!done.removed.has(handle.uid)) {
          await removeKubeletPod(kubelet, handle.sandboxId).catch(() => {});
        }
      }
      kubelet.close();
      runtime.close();
      removeTree(dir);
    }
  },
});
