// Process lookups through the daemon's gRPC API, on the simulated runtime
// and its simulated /proc: a lookup that finds no file descriptor to open
// /proc/PID/cgroup answers UNAVAILABLE with a message and is counted;
// the daemon keeps serving, and the next lookup is answered.
import assert from "node:assert/strict";
import { PodQueryClient, PodsClient } from "../../src/client/mod.ts";
import { GrpcError, STATUS } from "../../src/grpc/status.ts";
import { SimProcFs } from "../../src/sim/runtime/sim_procfs.ts";
import type { ProcFs } from "../../src/sources/process/mod.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { waitGateOpen } from "../_support/relist_churn.ts";
import { Harness as CriHarness, runPods } from "../sources/cri/_harness.ts";

Deno.test("a PID lookup out of file descriptors answers UNAVAILABLE, counted, and the daemon serves on", async () => {
  await using cri = await CriHarness.start();
  await runPods(cri.runtime, 3);
  const sim = new SimProcFs(cri.runtime);
  let exhausted = false;
  const procFs: ProcFs = {
    readText: (path) => {
      if (exhausted) {
        throw Object.assign(new Error(`Too many open files (os error 24): open '${path}'`), {
          code: "EMFILE",
        });
      }
      return sim.readText(path);
    },
    readLink: (path) => sim.readLink(path),
    inode: (path) => sim.inode(path),
  };
  await using h = await startHarness({ sources: [cri.source], procFs });
  assert.equal(await h.daemon.relistOnce(), true);
  await waitGateOpen(h.daemon.gate);
  using client = new PodsClient({ socket: h.socket });
  const query = new PodQueryClient(client);
  const pid = 100_000;
  const before = await query.get({ kind: "pid", pid });
  assert.equal(before.container?.initPid, pid);

  exhausted = true;
  await assert.rejects(query.get({ kind: "pid", pid }), (err: unknown) => {
    assert.ok(err instanceof GrpcError);
    assert.equal(err.code, STATUS.UNAVAILABLE);
    assert.match(err.message, /"\/proc\/100000\/cgroup".*no file descriptor left/);
    return true;
  });
  const metrics = (await h.http("/metrics")).body;
  assert.match(metrics, /^pods_api_process_lookups_total\{outcome="exhausted"\} 1$/m);

  exhausted = false;
  assert.equal((await query.get({ kind: "pid", pid })).pod.metadata.uid, before.pod.metadata.uid);
});
