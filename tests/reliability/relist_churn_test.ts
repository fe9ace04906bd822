// Issue 17: the daemon with its real relist loops and change watches, over a
// real manifest directory and a simulated CRI runtime on a socket, while
// manifests are written and removed a few ms apart, runtime pods start, exit
// and go, both sources relist every few tens of ms and some reads answer only
// after their timeout. The stream a v1alpha1 client gets over the daemon's
// socket must keep, per UID, ADDED (MODIFIED)* DELETED with no event ahead of
// its cause, and end where ListPods is.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { FakeClock, systemClock } from "../../src/clock.ts";
import { createLogger } from "../../src/log.ts";
import { Registry } from "../../src/metrics/exposition.ts";
import { createMetrics } from "../../src/metrics/metrics.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { removeKubeletPod, runKubeletPod } from "../../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../../src/sim/runtime/cri_runtime.ts";
import { startCriServer } from "../../src/sim/runtime/cri_server.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { StaticPodSource } from "../../src/sources/static/mod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { removeTree } from "../_support/remove_tree.ts";
import {
  answersLate,
  checkedWatch,
  churnCauses,
  ManifestChurn,
  pause,
  waitConverged,
  waitGateOpen,
} from "../_support/relist_churn.ts";
import { WatchSequenceChecker } from "../_support/watch_sequence.ts";
import { FUZZ_SEED, LONG, pollUntil, Prng, report, scrapedMetricValue } from "./_support.ts";

const NODE = "test-node";
const MANIFESTS = LONG ? 1000 : 240;
const RUNTIME_PODS = LONG ? 300 : 80;
/** The reads of each source that answer only after their relist gave up on them. */
const LATE_READS = new Set([5, 25]);

/** Runs `count` two-container pods 0-4 ms apart, exits some containers, removes 60 % of the pods. */
async function runtimeChurn(
  runtime: SimCriRuntime,
  count: number,
  prng: Prng,
  done: { ran: Set<string>; removed: Set<string> },
): Promise<void> {
  const handles = [];
  for (let i = 0; i < count; i++) {
    const uid = `uid-r-${i}`;
    done.ran.add(uid);
    const handle = await runKubeletPod(runtime, {
      name: `r-${i}`,
      uid,
      containers: [{ name: "app", image: "busybox:1" }, { name: "side", image: "busybox:1" }],
    });
    handles.push({ uid, ...handle });
    await pause(prng.int(5));
  }
  for (const handle of handles) {
    if (prng.int(2) === 0) {
      runtime.exitContainer(handle.containerIds["side"]!, { exitCode: 1, reason: "Error" });
      await pause(prng.int(3));
    }
  }
  for (const handle of handles) {
    if (prng.int(5) < 3) {
      done.removed.add(handle.uid);
      await removeKubeletPod(runtime, handle.sandboxId);
      await pause(prng.int(5));
    }
  }
}

Deno.test("WatchPods as served keeps ADDED (MODIFIED)* DELETED per pod, after its cause, through file and runtime churn", async () => {
  const dir = await Deno.makeTempDir({ prefix: "relist-churn-" });
  await Deno.mkdir(`${dir}/manifests`);
  // The daemon's loops and timeouts run on this clock: kept in step with real
  // time, as the sources' reads, the runtime and the file writes are real.
  const clock = new FakeClock();
  const ticker = setInterval(() => clock.advance(5), 5);
  // The runtime stamps its events on the wall clock the CRI source reads, so
  // that events newer than its last list are taken into its view at once.
  const runtime = new SimCriRuntime({ clock: systemClock, runtimeName: "containerd" });
  const cri = await startCriServer(runtime, { socketPath: `${dir}/cri.sock` });
  const client = new CriClient(cri.endpoint);
  const staticLog: { level: string; msg: string }[] = [];
  const criMetrics = createMetrics(new Registry());
  const files = answersLate(
    new StaticPodSource({
      dir: `${dir}/manifests`,
      nodeName: NODE,
      // Real time in `kubernetes.io/config.seen`: a manifest parsed twice would show.
      clock: systemClock,
      log: createLogger({ level: "info", write: (line) => staticLog.push(JSON.parse(line)) }),
      rescanMs: 30,
    }),
    LATE_READS,
  );
  const pods = answersLate(
    new CriPodSource({
      runtime: client,
      nodeName: NODE,
      runtimeName: "containerd",
      clock: systemClock,
      metrics: criMetrics,
    }),
    LATE_READS,
  );
  try {
    await using h = await startHarness({
      sources: [files, pods],
      clock,
      runLoops: true,
      flags: [
        "--relist-period",
        "40ms",
        "--runtime-request-timeout",
        "1s",
        "--watch-queue-size",
        "100000",
        "--rate-limit-burst",
        "1000",
      ],
    });
    const manifests = new ManifestChurn(`${dir}/manifests`, NODE);
    const done = { ran: new Set<string>(), removed: new Set<string>() };
    const checker = new WatchSequenceChecker(churnCauses(manifests, done.removed));
    await waitGateOpen(h.daemon.gate);
    const stream = checkedWatch(h.v1alpha1, checker);

    const prng = new Prng(FUZZ_SEED);
    await Promise.all([
      manifests.run(MANIFESTS, prng, {
        // Until the daemon serves the removals: the files that come back then get a new ADDED.
        removed: () =>
          pollUntil(
            () =>
              h.daemon.cache.list().filter((p) => manifests.owns(p.pod)).length ===
                manifests.expected().size,
            "the daemon serves the removed manifests as gone",
          ),
      }),
      runtimeChurn(runtime, RUNTIME_PODS, prng, done),
    ]);

    const expected = manifests.expected();
    for (const uid of done.ran) if (!done.removed.has(uid)) expected.add(uid);
    const keyOf = (pod: PodObject) =>
      manifests.owns(pod) ? `${pod.metadata.namespace}/${pod.metadata.name}` : pod.metadata.uid;
    await waitConverged(h.v1alpha1, checker, expected, keyOf);
    stream.cancel();
    assert.equal(await stream.ended, grpc.status.CANCELLED);

    assert.deepEqual(
      checker.violations.slice(0, 20),
      [],
      `the stream as served breaks no rule (${checker.violations.length} broken)`,
    );
    assert.deepEqual(
      staticLog.filter((l) => l.level === "warn"),
      [],
      "files removed while the directory is read are not warned about",
    );
    // Not vacuous: the stream followed removals of both kinds while they happened.
    const deleted = checker.deleted.map((pod) => manifests.owns(pod));
    assert.ok(deleted.includes(true), "the stream saw manifests' pods deleted");
    assert.ok(deleted.includes(false), "the stream saw runtime pods deleted");
    assert.ok(
      checker.counts.ADDED! > checker.uids,
      "and pods ADDED again after their file came back",
    );
    assert.ok(files.late > 0 && pods.late > 0, "some reads answered after their timeout");
    const events = (await criMetrics.runtimeEvents.get()).values;
    const applied = events.find((v) => v.labels.outcome === "applied")?.value ?? 0;
    assert.ok(applied > 0, "runtime events were taken into the CRI source's view between lists");
    const errors = await scrapedMetricValue(h.daemon.registry, "pods_api_relist_errors_total");
    // A late answer given at shutdown (one per source at most) failed no relist.
    assert.ok(errors >= files.late + pods.late - 2, "every late answer's relist failed");
    const relists = await scrapedMetricValue(
      h.daemon.registry,
      "pods_api_relist_duration_seconds_count",
    );
    await report(
      "relist churn",
      `${MANIFESTS} manifests + ${RUNTIME_PODS} runtime pods: ${checker.uids} pods seen, ` +
        `${JSON.stringify(checker.counts)} events, ${checker.violations.length} sequence ` +
        `violations, ${files.late + pods.late} late answers dropped, ${relists} relists`,
      {
        manifests: MANIFESTS,
        runtimePods: RUNTIME_PODS,
        pods: checker.uids,
        events: checker.counts,
        violations: checker.violations.length,
        lateAnswers: files.late + pods.late,
        relists,
        relistErrors: errors,
      },
    );
  } finally {
    clearInterval(ticker);
    client.close();
    await cri.close();
    removeTree(dir);
  }
});
