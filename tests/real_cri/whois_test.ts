/**
 * Issue 40 on a real containerd (`scripts/real_cri/run_test.sh` runs
 * tests/real_cri/ on Debian 12's 1.6 and Debian 13's 1.7.24): which pod's
 * container a process is in, by host PID, cgroup ID, cgroup path and mount
 * namespace inode.
 *
 * The pods' containers fork a child and `exec` themselves into another
 * program, and a further process is `exec`'d into one from outside (`ctr
 * task exec`, as the kubelet's exec is). The test finds each process' host
 * PID on its own, walking `/proc` for a unique last argument, and reads
 * what the kernel says of it (its cgroup v2 directory, that directory's
 * inode, its mount namespace); every lookup's answer is checked against
 * that and against the runtime (the container ID from CreateContainer, the
 * init PID from its verbose ContainerStatus).
 *
 * - Both runtimes, relists driven by the test: every process of a running
 *   container resolves to it; after it exits, its cgroup ID, path and
 *   namespace and its former PIDs answer NOT_FOUND, while its pod's other
 *   container still resolves; the test process itself is NOT_FOUND.
 * - containerd 1.7 (events with statuses), at a relist period far longer
 *   than the test: a container started after the daemon synced is found
 *   from its event (counted as a process read `taken`), and is NOT_FOUND
 *   once an event shows it exited.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PodQueryClient } from "../../src/client/pod_query_client.ts";
import { PodsClient } from "../../src/client/pods_client.ts";
import { STATUS } from "../../src/grpc/status.ts";
import { GrpcError } from "../../src/grpc/status.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import {
  type KubeletContainerSpec,
  removeKubeletPod,
  runKubeletPod,
} from "../../src/sim/runtime/cri_kubelet.ts";
import { CriClient, CriPodSource } from "../../src/sources/cri/mod.ts";
import { type Harness, startHarness } from "../_support/daemon_harness.ts";
import { poll } from "../_support/poll.ts";
import { waitGateOpen } from "../_support/relist_churn.ts";
import { BUSYBOX, runtimeEvents, SOCKET, STATE } from "./_runtime.ts";

const NODE = "test-node";
/** The cgroup v2 mount of this hybrid host (cgroup v1 controllers at /sys/fs/cgroup). */
const UNIFIED = "/sys/fs/cgroup/unified";
/** Bound of every wait (a hang bound, not a latency claim). */
const DEADLINE_MS = 60_000;

const RUNTIME = await runtimeEvents(SOCKET);
const EVENTS = RUNTIME.streams || RUNTIME.expected;

/**
 * The host PIDs of the shells whose last argument is `marker`, from every
 * `/proc/PID/cmdline` (`ctr`, which starts an exec'd one, ends with it too).
 */
function pidsWithLastArg(marker: string): number[] {
  const out: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let argv: string[];
    try {
      argv = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
    } catch {
      continue; // exited while we walked
    }
    if (argv.at(-1) === "") argv.pop();
    if (argv[0] === "sh" && argv.at(-1) === marker) out.push(Number(entry.name));
  }
  return out;
}

/** The one process with that last argument, once it is there. */
function onePid(marker: string): Promise<number> {
  return poll(() => {
    // Two for a moment when the shell forks to run its `sleep`: the fork has its argv.
    const pids = pidsWithLastArg(marker);
    return pids.length === 1 ? pids[0] : undefined;
  }, { what: `the process ${marker} in /proc`, timeoutMs: DEADLINE_MS });
}

/** What the kernel says of a process: its cgroup v2 directory, its inode, its mount namespace. */
function kernelView(pid: number): { cgroupPath: string; cgroupId: number; mntns: number } {
  const line = Deno.readTextFileSync(`/proc/${pid}/cgroup`).split("\n")
    .find((l) => l.startsWith("0::"));
  assert.ok(line !== undefined, `/proc/${pid}/cgroup has a cgroup v2 line`);
  const cgroupPath = line.slice(3);
  const cgroupId = Deno.statSync(`${UNIFIED}${cgroupPath}`).ino!;
  const link = Deno.readLinkSync(`/proc/${pid}/ns/mnt`);
  const mntns = Number(/^mnt:\[(\d+)\]$/.exec(link)![1]);
  return { cgroupPath, cgroupId, mntns };
}

/** The parent PID of a process. */
function parentOf(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

/**
 * A container whose shell forks a child and then `exec`s itself into a
 * loop: its init PID ends up running `main-<token>`, its child `child-<token>`.
 */
function forkingContainer(name: string, token: string): KubeletContainerSpec {
  const loop = "while :; do sleep 1; done";
  return {
    name,
    image: BUSYBOX,
    command: [
      "sh",
      "-c",
      `sh -c '${loop}' child-${token} & exec sh -c '${loop}' main-${token}`,
      `init-${token}`,
    ],
  };
}

/** A process `exec`'d into a running container from outside, as the kubelet's exec is. */
function execInto(containerId: string, token: string): Deno.ChildProcess {
  return new Deno.Command("ctr", {
    args: [
      "--address",
      SOCKET!,
      "--namespace",
      "k8s.io",
      "task",
      "exec",
      "--exec-id",
      `whois-${token}`,
      containerId,
      "sh",
      "-c",
      "while :; do sleep 1; done",
      `exec-${token}`,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/** The init PID the runtime's verbose ContainerStatus names. */
async function runtimePid(kubelet: CriClient, containerId: string): Promise<number> {
  const status = await kubelet.containerStatus({ containerId, verbose: true });
  const pid = JSON.parse(status.info?.["info"] ?? "{}").pid;
  assert.ok(typeof pid === "number" && pid > 0, `the runtime names ${containerId}'s init PID`);
  return pid;
}

type Key = Parameters<PodQueryClient["get"]>[0];

/** The gRPC status a lookup answers with (0: found). */
async function codeOf(query: PodQueryClient, key: Key): Promise<number> {
  try {
    await query.get(key);
    return STATUS.OK;
  } catch (err) {
    if (err instanceof GrpcError) return err.code;
    throw err;
  }
}

/** The processes of one running container, found in /proc. */
interface Processes {
  readonly containerId: string;
  readonly name: string;
  readonly initPid: number;
  readonly main: number;
  readonly child: number;
  readonly execd: number | undefined;
}

/** Checks every lookup of a container's processes against the kernel and the runtime. */
async function assertResolves(query: PodQueryClient, uid: string, p: Processes): Promise<void> {
  const kernel = kernelView(p.main);
  const byKernel: Key[] = [
    { kind: "cgroupId", cgroupId: kernel.cgroupId },
    { kind: "cgroupPath", path: kernel.cgroupPath },
    { kind: "cgroupPath", path: `${UNIFIED}${kernel.cgroupPath}` },
    { kind: "mntns", inode: kernel.mntns },
  ];
  const pids = [p.main, p.child, ...(p.execd === undefined ? [] : [p.execd])];
  for (const key of [...pids.map((pid): Key => ({ kind: "pid", pid })), ...byKernel]) {
    const what = `${p.name}: ${JSON.stringify(key)}`;
    const { pod, container } = await query.get(key);
    assert.equal(pod.metadata.uid, uid, what);
    assert.ok(container !== undefined, what);
    assert.equal(container.containerId, `containerd://${p.containerId}`, what);
    assert.equal(container.name, p.name, what);
    assert.equal(container.init, false, what);
    assert.equal(container.ephemeral, false, what);
    assert.equal(container.initPid, p.initPid, what);
    assert.equal(container.cgroupPath, kernel.cgroupPath, what);
    assert.equal(container.cgroupId, kernel.cgroupId, what);
    assert.equal(container.mntnsInode, kernel.mntns, what);
  }
  // The kernel puts the child and the exec'd process where it put the init process.
  for (const pid of pids) assert.deepEqual(kernelView(pid), kernel, `PID ${pid}`);
}

/** A daemon on the real runtime, with the metrics registry its CRI source counts into. */
function daemon(runLoops: boolean, flags: string[] = []) {
  const registry = createMetricsRegistry();
  const runtime = new CriClient(SOCKET!);
  const source = new CriPodSource({ runtime, nodeName: NODE, metrics: registry.metrics });
  // The test asks dozens of lookups in a row: above the default rates.
  const limits = [
    "--rate-limit-qps",
    "10000",
    "--rate-limit-burst",
    "1000",
    "--connection-rate-limit-qps",
    "10000",
    "--connection-rate-limit-burst",
    "1000",
  ];
  const harness = startHarness({
    sources: [source],
    registry,
    runLoops,
    flags: [...limits, ...flags],
  });
  return { runtime, harness };
}

/** A metric's value in a scrape (0 when absent). */
async function scraped(h: Harness, series: string): Promise<number> {
  const body = (await h.http("/metrics")).body;
  const line = body.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

Deno.test({
  name: `whois on ${RUNTIME.version}: a container's PIDs, child, exec'd process, cgroup and mntns`,
  ignore: SOCKET === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kubelet = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    const { runtime, harness } = daemon(false);
    const token = crypto.randomUUID().slice(0, 8);
    const uid = `whois-${token}`;
    let sandboxId: string | undefined;
    let exec: Deno.ChildProcess | undefined;
    try {
      await using h = await harness;
      using client = new PodsClient({ socket: h.socket });
      const query = new PodQueryClient(client);
      const handle = await runKubeletPod(kubelet, {
        name: "whois",
        namespace: "issue-40",
        uid,
        terminationGracePeriodSeconds: 1,
        logRoot: `${STATE}/pod-logs`,
        containers: [forkingContainer("app", `a${token}`), forkingContainer("side", `s${token}`)],
      });
      sandboxId = handle.sandboxId;
      const processes: Processes[] = [];
      for (const [name, t] of [["app", `a${token}`], ["side", `s${token}`]] as const) {
        const containerId = handle.containerIds[name]!;
        const initPid = await runtimePid(kubelet, containerId);
        const main = await onePid(`main-${t}`);
        const child = await onePid(`child-${t}`);
        // The init process exec'd itself: the runtime's PID is the one now running main.
        assert.equal(main, initPid, `${name}: the runtime's init PID runs main-${t}`);
        assert.equal(parentOf(child), main, `${name}: child-${t} is the init process' child`);
        processes.push({ containerId, name, initPid, main, child, execd: undefined });
      }
      exec = execInto(processes[0]!.containerId, `a${token}`);
      processes[0] = { ...processes[0]!, execd: await onePid(`exec-a${token}`) };
      assert.notEqual(parentOf(processes[0].execd!), processes[0].main, "exec'd from outside");

      assert.equal(await h.daemon.relistOnce(), true, "the first relist");
      await waitGateOpen(h.daemon.gate);
      for (const p of processes) await assertResolves(query, uid, p);
      assert.equal(await codeOf(query, { kind: "pid", pid: Deno.pid }), STATUS.NOT_FOUND);
      assert.equal(
        await codeOf(query, { kind: "cgroupPath", path: kernelView(Deno.pid).cgroupPath }),
        STATUS.NOT_FOUND,
        "the test's own cgroup",
      );
      assert.equal(await codeOf(query, { kind: "pid", pid: 0 }), STATUS.INVALID_ARGUMENT);

      const [app, side] = processes as [Processes, Processes];
      const gone = kernelView(app.main);
      await kubelet.stopContainer({ containerId: app.containerId, timeout: 0 });
      await exec.status;
      exec = undefined;
      assert.equal(await h.daemon.relistOnce(), true, "the relist after the exit");
      for (
        const key of [
          { kind: "cgroupId", cgroupId: gone.cgroupId },
          { kind: "cgroupPath", path: gone.cgroupPath },
          { kind: "mntns", inode: gone.mntns },
          { kind: "pid", pid: app.main },
          { kind: "pid", pid: app.child },
          { kind: "pid", pid: app.execd! },
        ] as const
      ) {
        assert.equal(await codeOf(query, key), STATUS.NOT_FOUND, `exited: ${JSON.stringify(key)}`);
      }
      await assertResolves(query, uid, side);
    } finally {
      if (exec !== undefined) {
        exec.kill("SIGKILL");
        await exec.status;
      }
      if (sandboxId !== undefined) await removeKubeletPod(kubelet, sandboxId);
      kubelet.close();
      runtime.close();
    }
  },
});

Deno.test({
  name:
    `whois on ${RUNTIME.version}: a container started between relists is found from its event, and NOT_FOUND once it exits${
      EVENTS ? "" : " (ignored: no event stream)"
    }`,
  ignore: SOCKET === undefined || !EVENTS,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.ok(RUNTIME.streams, `${RUNTIME.version} streams container events with statuses`);
    const kubelet = new CriClient(SOCKET!, { requestTimeoutMs: 120_000 });
    // No periodic relist within the test: only events can tell the daemon.
    const { runtime, harness } = daemon(true, ["--relist-period", "30m"]);
    const token = crypto.randomUUID().slice(0, 8);
    const uid = `whois-late-${token}`;
    let sandboxId: string | undefined;
    try {
      await using h = await harness;
      await waitGateOpen(h.daemon.gate);
      using client = new PodsClient({ socket: h.socket });
      const query = new PodQueryClient(client);
      const relists = 'pods_api_relist_duration_seconds_count{source="cri"}';
      const taken = 'pods_api_runtime_process_reads_total{outcome="taken"}';
      const takenBefore = await scraped(h, taken);
      const relistsBefore = await scraped(h, relists);

      const handle = await runKubeletPod(kubelet, {
        name: "late",
        namespace: "issue-40",
        uid,
        terminationGracePeriodSeconds: 1,
        logRoot: `${STATE}/pod-logs`,
        containers: [forkingContainer("app", `l${token}`)],
      });
      sandboxId = handle.sandboxId;
      const containerId = handle.containerIds["app"]!;
      const initPid = await runtimePid(kubelet, containerId);
      const main = await onePid(`main-l${token}`);
      const child = await onePid(`child-l${token}`);
      await poll(
        async () => await codeOf(query, { kind: "pid", pid: child }) === STATUS.OK || undefined,
        { what: "the started container's child found", timeoutMs: DEADLINE_MS, intervalMs: 20 },
      );
      await assertResolves(query, uid, {
        containerId,
        name: "app",
        initPid,
        main,
        child,
        execd: undefined,
      });
      assert.ok(await scraped(h, taken) > takenBefore, "its process read from the event");
      assert.equal(await scraped(h, relists), relistsBefore, "found with no relist");

      const gone = kernelView(main);
      await kubelet.stopContainer({ containerId, timeout: 0 });
      await poll(
        async () =>
          await codeOf(query, { kind: "cgroupId", cgroupId: gone.cgroupId }) ===
            STATUS.NOT_FOUND || undefined,
        { what: "the exited container to leave the index", timeoutMs: DEADLINE_MS, intervalMs: 20 },
      );
      assert.equal(await codeOf(query, { kind: "mntns", inode: gone.mntns }), STATUS.NOT_FOUND);
      assert.equal(await codeOf(query, { kind: "pid", pid: main }), STATUS.NOT_FOUND);
      assert.equal(await scraped(h, relists), relistsBefore, "left with no relist");
    } finally {
      if (sandboxId !== undefined) await removeKubeletPod(kubelet, sandboxId);
      kubelet.close();
      runtime.close();
    }
  },
});
