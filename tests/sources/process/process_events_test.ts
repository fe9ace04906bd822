// Process lookups on the simulated runtime over its socket: a container a
// runtime event shows started is found before any relist (its init process
// read at once by one verbose ContainerStatus), and leaves the index as soon
// as an event shows it exited; a lookup reads only the process asked about.
import assert from "node:assert/strict";
import { runKubeletPod } from "../../../src/sim/runtime/cri_kubelet.ts";
import { SIM_CGROUP_ROOT, SimProcFs } from "../../../src/sim/runtime/sim_procfs.ts";
import {
  ProcessIndex,
  type ProcessKey,
  ProcessLookupError,
  type ProcessLookupFailure,
} from "../../../src/sources/process/mod.ts";
import type { Metrics } from "../../../src/metrics/metrics.ts";
import { poll } from "../../_support/poll.ts";
import { Harness, runPods } from "../cri/_harness.ts";

async function counted(
  counter: Metrics["runtimeProcessReads"] | Metrics["processLookups"],
  outcome: string,
): Promise<number> {
  return (await counter.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

function lookupFails(index: ProcessIndex, key: ProcessKey): ProcessLookupFailure | "found" {
  try {
    index.lookup(key);
    return "found";
  } catch (err) {
    if (err instanceof ProcessLookupError) return err.reason;
    throw err;
  }
}

/** The runtime, its source watching events, and an index over a simulated /proc. */
async function watched() {
  const h = await Harness.start();
  const stop = new AbortController();
  const done = h.source.watchChanges(stop.signal, { relist: () => {}, view: () => {} });
  await poll(() => h.runtime.eventSubscribers >= 1 ? true : undefined);
  const fs = new SimProcFs(h.runtime);
  const index = new ProcessIndex(h.source, {
    fs,
    cgroupRoots: [SIM_CGROUP_ROOT],
    metrics: h.metrics,
  });
  return {
    h,
    fs,
    index,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await done;
      await h[Symbol.asyncDispose]();
    },
  };
}

Deno.test("a container started between relists is found from its event, and gone once it exits", async () => {
  await using w = await watched();
  await runPods(w.h.runtime, 2);
  await w.h.list();
  const lists = w.h.runtime.calls.listContainers;
  const first = w.h.runtime.processOf(100_000);
  assert.equal(w.index.lookup({ kind: "pid", pid: 100_000 }).containerId, first?.containerId);

  const started = await runKubeletPod(w.h.runtime, {
    name: "late",
    uid: "uid-late",
    containers: [{ name: "app", image: "busybox:1" }],
  });
  const id = started.containerIds["app"]!;
  const pid = 100_002;
  assert.equal(w.h.runtime.processOf(pid)?.containerId, id);
  const found = await poll(() => {
    try {
      return w.index.lookup({ kind: "pid", pid });
    } catch (err) {
      if (err instanceof ProcessLookupError && err.reason === "not_found") return undefined;
      throw err;
    }
  }, { what: "the started container's process in the index" });
  assert.equal(found.containerId, id);
  assert.equal(found.podUid, "uid-late");
  assert.equal(w.index.lookup({ kind: "cgroupId", cgroupId: found.cgroupId }).containerId, id);
  assert.equal(w.index.lookup({ kind: "mntns", inode: found.mntns }).containerId, id);
  assert.equal(w.h.runtime.calls.listContainers, lists, "found without a relist");
  assert.equal(await counted(w.h.metrics.runtimeProcessReads, "taken"), 1);

  w.h.runtime.exitContainer(id, { exitCode: 0 });
  // Its cgroup ID is the index's alone to answer (no /proc read): it waits for the event.
  await poll(
    () =>
      lookupFails(w.index, { kind: "cgroupId", cgroupId: found.cgroupId }) === "not_found"
        ? true
        : undefined,
    {
      what: "the exited container to leave the index",
    },
  );
  assert.equal(lookupFails(w.index, { kind: "mntns", inode: found.mntns }), "not_found");
  assert.equal(lookupFails(w.index, { kind: "cgroupPath", path: found.cgroupPath }), "not_found");
  assert.equal(lookupFails(w.index, { kind: "pid", pid }), "not_found");
  assert.equal(w.h.runtime.calls.listContainers, lists, "left without a relist");
  assert.ok(await counted(w.h.metrics.processLookups, "found") >= 4);
});

Deno.test("a lookup reads only the /proc files of the process asked about, however many pods", async () => {
  await using w = await watched();
  const pods = 300;
  await runPods(w.h.runtime, pods);
  await w.h.list();
  // Building the index reads each init process once (its mount namespace).
  w.index.lookup({ kind: "pid", pid: 100_000 });
  assert.equal(w.fs.procReads, pods + 1);
  const before = w.fs.procReads;
  for (let i = 0; i < pods; i += 7) {
    const found = w.index.lookup({ kind: "pid", pid: 100_000 + i });
    w.index.lookup({ kind: "cgroupId", cgroupId: found.cgroupId });
    w.index.lookup({ kind: "cgroupPath", path: found.cgroupPath });
    w.index.lookup({ kind: "mntns", inode: found.mntns });
  }
  const asked = Math.ceil(pods / 7);
  assert.equal(w.fs.procReads - before, asked, "one /proc/PID/cgroup per PID lookup, no scan");

  // A container more: the index takes it in by reading that one process.
  await runKubeletPod(w.h.runtime, {
    name: "more",
    uid: "uid-more",
    containers: [{ name: "app", image: "busybox:1" }],
  });
  await w.h.list();
  const rebuilt = w.fs.procReads;
  const more = w.index.lookup({ kind: "mntns", inode: 4_026_531_840 + 100_000 + pods });
  assert.equal(more.podUid, "uid-more");
  assert.equal(w.fs.procReads - rebuilt, 1, "only the new container's process read");
});
