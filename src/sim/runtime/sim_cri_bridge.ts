/**
 * Keeps a simulated CRI runtime in step with a {@linkcode SimulatedNode}: each
 * simulated pod becomes a pod sandbox with its containers, made the way the
 * kubelet makes them (labels, annotations, attempts), in the states the
 * simulated pod reports. Served on a socket by {@linkcode startSimulatedRuntime},
 * the demo (`serve --simulate`) and the tests read it through the same CRI
 * client and relist code as a real containerd.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";
import { type Logger, silentLogger } from "../../log.ts";
import type { PodObject } from "../../model/pod.ts";
import {
  type ContainerConfig,
  type MessageInit,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
  type PodSandboxConfig,
} from "../../sources/cri/mod.ts";
import { kubeletContainerConfig, kubeletSandboxConfig, removeKubeletPod } from "./cri_kubelet.ts";
import { SimCriRuntime } from "./cri_runtime.ts";
import { type CriServer, startCriServer } from "./cri_server.ts";
import type { SimulatedNode } from "../node/simulated_node.ts";
import {
  type DesiredContainer,
  type DesiredInstance,
  type DesiredPod,
  desiredPod,
  type InstanceState,
  type SandboxPhase,
} from "./_bridge_desired.ts";
import { SerialQueue } from "../../serial_queue.ts";
import { abortableSleep } from "../../sleep.ts";

/** Options of {@linkcode SimCriBridge}. */
export interface SimCriBridgeOptions {
  /** The node whose pods the runtime mirrors. */
  node: SimulatedNode;
  /** The runtime to keep in step; nothing else should create pods in it. */
  runtime: SimCriRuntime;
  /** Receives a warning per pod that could not be mirrored (retried next sync). */
  log?: Logger;
}

/** What one {@linkcode SimCriBridge.sync} did. */
export interface SimCriSyncResult {
  /** Node mutations applied by `advanceTo`. */
  readonly mutations: number;
  /** Pods given a sandbox. */
  readonly added: number;
  /** Existing pods whose sandbox or containers changed in the runtime. */
  readonly changed: number;
  /** Pods whose sandbox was removed. */
  readonly removed: number;
  /** Pods that could not be mirrored this time (a runtime call failed). */
  readonly failed: number;
}

interface InstanceRecord {
  readonly id: string;
  readonly attempt: number;
  state: InstanceState;
  /** The values last written to the runtime (NaN: unknown, rewrite). */
  values: Omit<DesiredInstance, "attempt" | "state">;
}

interface PodRecord {
  readonly sandboxId: string;
  /** The node's pod object last mirrored completely; `undefined` forces a reconcile. */
  pod: PodObject | undefined;
  /** The sandbox's phase in the runtime. */
  sandbox: SandboxPhase;
  ip: string;
  /** Instances per container name, oldest attempt first. */
  readonly containers: Map<string, InstanceRecord[]>;
}

const STATE_RANK: Readonly<Record<InstanceState, number>> = { created: 0, running: 1, exited: 2 };

const UNKNOWN_VALUES: InstanceRecord["values"] = {
  createdAt: NaN,
  startedAt: NaN,
  finishedAt: NaN,
  exitCode: NaN,
  reason: "",
  message: "",
};

function sameValues(a: InstanceRecord["values"], b: InstanceRecord["values"]): boolean {
  return a.createdAt === b.createdAt && a.startedAt === b.startedAt &&
    a.finishedAt === b.finishedAt && a.exitCode === b.exitCode && a.reason === b.reason &&
    a.message === b.message;
}

/**
 * The kubelet's sandbox config for a pod, with its namespace modes from the
 * spec: IPC and PID follow `hostIPC` / `hostPID`, not the host network.
 */
function sandboxConfig(desired: DesiredPod): MessageInit<PodSandboxConfig> {
  const node = NAMESPACE_MODE.node;
  return {
    ...kubeletSandboxConfig(desired.pod),
    linux: {
      cgroupParent: "",
      securityContext: {
        namespaceOptions: {
          network: desired.pod.hostNetwork ? node : NAMESPACE_MODE.pod,
          pid: desired.hostPID ? node : NAMESPACE_MODE.container,
          ipc: desired.hostIPC ? node : NAMESPACE_MODE.pod,
        },
      },
    },
  };
}

function valuesOf(d: DesiredInstance): InstanceRecord["values"] {
  const { attempt: _attempt, state: _state, ...values } = d;
  return values;
}

/**
 * Mirrors a {@linkcode SimulatedNode} into a {@linkcode SimCriRuntime}.
 * Each sync advances the node to a time and then changes the runtime only
 * where the node's pods changed: an unchanged pod (same object) costs a map
 * lookup and makes no runtime call, so a CRI relist sees nothing new.
 *
 * What the runtime holds per pod: one sandbox (kubelet labels and the pod's
 * labels and annotations as at its creation, the pod's creation time and
 * IP; READY, NOTREADY once the pod finished) and per spec container the
 * current instance plus the one before it (attempt = restart count; states,
 * exit codes, reasons and times from the pod's container statuses). A pod
 * that leaves the node has its sandbox stopped and removed.
 *
 * @example Usage
 * ```ts
 * import { FakeClock } from "../../clock.ts";
 * import { SimCriRuntime } from "./cri_runtime.ts";
 * import { SimCriBridge } from "./sim_cri_bridge.ts";
 * import { SimulatedNode } from "../node/simulated_node.ts";
 * const clock = new FakeClock();
 * const node = new SimulatedNode({ clock, pods: 10, seed: 3 });
 * const runtime = new SimCriRuntime({ clock });
 * const bridge = new SimCriBridge({ node, runtime });
 * await bridge.sync(clock.now());
 * runtime.sandboxCount; // 10
 * ```
 */
export class SimCriBridge {
  /** The node mirrored. */
  readonly node: SimulatedNode;
  /** The runtime kept in step. */
  readonly runtime: SimCriRuntime;
  readonly #log: Logger;
  readonly #pods = new Map<string, PodRecord>();
  /** Syncs run one at a time. */
  readonly #syncs = new SerialQueue();

  /**
   * Starts nothing: call {@linkcode SimCriBridge.sync}.
   *
   * @param options The node, the runtime and a logger.
   */
  constructor(options: SimCriBridgeOptions) {
    this.node = options.node;
    this.runtime = options.runtime;
    this.#log = options.log ?? silentLogger;
  }

  /** Number of pods that have a sandbox in the runtime. */
  get podCount(): number {
    return this.#pods.size;
  }

  /**
   * Returns the sandbox ID of a pod.
   *
   * @param uid The pod's UID.
   * @returns The ID, or `undefined` when the pod has no sandbox.
   */
  sandboxId(uid: string): string | undefined {
    return this.#pods.get(uid)?.sandboxId;
  }

  /**
   * Advances the node to `nowMs`, then brings the runtime in line with its
   * pods. Calls are queued: concurrent syncs run one after the other. A pod
   * whose runtime calls fail is logged, counted in `failed` and retried at
   * the next sync; the other pods are still mirrored.
   *
   * @param nowMs Clock time in epoch milliseconds.
   * @returns What changed.
   * @throws {TypeError} When `nowMs` is not a finite number.
   */
  sync(nowMs: number): Promise<SimCriSyncResult> {
    return this.#syncs.run(() => this.#sync(nowMs));
  }

  async #sync(nowMs: number): Promise<SimCriSyncResult> {
    const mutations = this.node.advanceTo(nowMs);
    const pods = this.node.pods();
    let added = 0;
    let changed = 0;
    let removed = 0;
    let failed = 0;
    const seen = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      seen.add(uid);
      const known = this.#pods.get(uid);
      if (known?.pod === pod) continue;
      try {
        const made = await this.runtime.holdEventStatuses(() => this.#reconcile(pod, known));
        if (known === undefined) added++;
        else if (made) changed++;
      } catch (err) {
        failed++;
        this.#warn("cannot mirror a simulated pod into the runtime", pod, err);
      }
    }
    for (const [uid, record] of this.#pods) {
      if (seen.has(uid)) continue;
      try {
        await removeKubeletPod(this.runtime, record.sandboxId);
        this.#pods.delete(uid);
        removed++;
      } catch (err) {
        failed++;
        this.#log.warn("cannot remove a simulated pod from the runtime", {
          uid,
          error: String(err),
        });
      }
    }
    return { mutations, added, changed, removed, failed };
  }

  #warn(msg: string, pod: PodObject, err: unknown): void {
    const { namespace, name, uid } = pod.metadata;
    this.#log.warn(msg, { pod: `${namespace}/${name}`, uid, error: String(err) });
  }

  /** Applies one pod; returns whether any runtime call changed something. */
  async #reconcile(pod: PodObject, known: PodRecord | undefined): Promise<boolean> {
    const desired = desiredPod(pod);
    let record = known;
    let made = false;
    if (record === undefined) {
      record = await this.#createSandbox(desired);
      made = true;
    }
    // Until this pod is mirrored completely, a failure retries it next sync.
    record.pod = undefined;
    if (record.sandbox !== "stopped") {
      const id = record.sandboxId;
      // CreateContainer needs a READY sandbox; a pending one is READY only
      // within this synchronous stretch, which no CRI call can observe.
      if (record.sandbox === "pending") this.#setSandboxState(id, POD_SANDBOX_STATE.ready);
      try {
        for (const c of desired.containers) {
          if (await this.#reconcileContainer(record, desired, c)) made = true;
        }
      } finally {
        if (record.sandbox === "pending") this.#setSandboxState(id, POD_SANDBOX_STATE.notReady);
      }
      if (desired.sandbox === "stopped") {
        await this.runtime.stopPodSandbox({ podSandboxId: id });
        record.ip = "";
        made = true;
      } else {
        if (record.ip !== desired.ip) {
          this.runtime.setSandboxIps(id, { ip: desired.ip });
          record.ip = desired.ip;
          made = true;
        }
        if (record.sandbox !== desired.sandbox) {
          this.#setSandboxState(
            id,
            desired.sandbox === "ready" ? POD_SANDBOX_STATE.ready : POD_SANDBOX_STATE.notReady,
          );
          made = true;
        }
      }
      record.sandbox = desired.sandbox;
    }
    record.pod = pod;
    return made;
  }

  #setSandboxState(id: string, state: number): void {
    this.runtime.setSandboxState(id, state);
  }

  /**
   * RunPodSandbox (READY), then the pod's creation time and IP; the caller
   * makes it NOTREADY while the pod is pending.
   */
  async #createSandbox(desired: DesiredPod): Promise<PodRecord> {
    const { podSandboxId } = await this.runtime.runPodSandbox({
      config: sandboxConfig(desired),
    });
    const record: PodRecord = {
      sandboxId: podSandboxId,
      pod: undefined,
      sandbox: "ready",
      ip: desired.ip,
      containers: new Map(),
    };
    this.#pods.set(desired.uid, record);
    if (desired.createdAt > 0) {
      this.runtime.tamperSandbox(podSandboxId, (s) => s.createdAt = desired.createdAt);
    }
    this.runtime.setSandboxIps(podSandboxId, { ip: desired.ip });
    return record;
  }

  /** Brings one container's instances in line; returns whether anything changed. */
  async #reconcileContainer(
    record: PodRecord,
    desired: DesiredPod,
    c: DesiredContainer,
  ): Promise<boolean> {
    const { newest, previous } = c;
    if (newest === undefined) return false;
    let instances = record.containers.get(c.name) ?? [];
    record.containers.set(c.name, instances);
    let made = false;
    const kept: InstanceRecord[] = [];
    for (const want of previous === undefined ? [newest] : [previous, newest]) {
      let inst = instances.find((i) => i.attempt === want.attempt);
      if (inst !== undefined && STATE_RANK[inst.state] > STATE_RANK[want.state]) {
        // The runtime cannot go back (an exited instance never runs again): replace it.
        await this.runtime.removeContainer({ containerId: inst.id });
        instances = instances.filter((i) => i !== inst);
        record.containers.set(c.name, instances);
        inst = undefined;
        made = true;
      }
      if (inst === undefined) {
        // The kubelet starts a new instance only once the older ones have stopped.
        for (const old of instances) {
          if (old.attempt < want.attempt && old.state !== "exited") {
            await this.#stopInstance(old, want.createdAt);
          }
        }
        inst = await this.#createInstance(record, desired, c, want);
        instances.push(inst);
        instances.sort((a, b) => a.attempt - b.attempt);
        made = true;
      }
      if (await this.#advance(inst, want)) made = true;
      kept.push(inst);
    }
    if (previous === undefined) {
      // The pod status does not say what ran before: keep whatever instance
      // the runtime has from before (the kubelet's GC keeps the last dead one).
      const before = instances.filter((i) => i.attempt < newest.attempt).at(-1);
      if (before !== undefined) {
        if (before.state !== "exited") await this.#stopInstance(before, newest.createdAt);
        kept.unshift(before);
      }
    }
    for (const inst of instances) {
      if (kept.includes(inst)) continue;
      await this.runtime.removeContainer({ containerId: inst.id });
      made = true;
    }
    record.containers.set(c.name, kept);
    return made;
  }

  async #createInstance(
    record: PodRecord,
    desired: DesiredPod,
    c: DesiredContainer,
    want: DesiredInstance,
  ): Promise<InstanceRecord> {
    const base = kubeletContainerConfig(desired.pod, c.spec, want.attempt);
    const config: MessageInit<ContainerConfig> = {
      ...base,
      annotations: { ...base.annotations, ...c.annotations },
    };
    this.runtime.preferredContainerId = want.id;
    const { containerId } = await this.runtime.createContainer({
      podSandboxId: record.sandboxId,
      config,
      sandboxConfig: sandboxConfig(desired),
    });
    return { id: containerId, attempt: want.attempt, state: "created", values: UNKNOWN_VALUES };
  }

  /** Moves an instance forward to the wanted state and values. */
  async #advance(inst: InstanceRecord, want: DesiredInstance): Promise<boolean> {
    let made = false;
    if (inst.state === "created" && want.state !== "created") {
      await this.runtime.startContainer({ containerId: inst.id });
      inst.state = "running";
      made = true;
    }
    if (inst.state === "running" && want.state === "exited") {
      this.runtime.exitContainer(inst.id, {
        exitCode: want.exitCode,
        reason: want.reason,
        message: want.message,
      });
      inst.state = "exited";
      made = true;
    }
    const values = valuesOf(want);
    if (made || !sameValues(inst.values, values)) {
      this.runtime.tamperContainer(inst.id, (s) => {
        s.createdAt = values.createdAt;
        s.startedAt = values.startedAt;
        s.finishedAt = values.finishedAt;
        s.exitCode = values.exitCode;
        s.reason = values.reason;
        s.message = values.message;
      });
      inst.values = values;
      made = true;
    }
    return made;
  }

  /** Stops an instance the pod status no longer describes (killed: 137). */
  async #stopInstance(inst: InstanceRecord, atNs: number): Promise<void> {
    await this.runtime.stopContainer({ containerId: inst.id, timeout: 0 });
    const startedAt = inst.state === "created" ? 0 : inst.values.startedAt;
    const finishedAt = Math.max(atNs, Number.isFinite(startedAt) ? startedAt : 0);
    this.runtime.tamperContainer(inst.id, (s) => {
      if (Number.isFinite(startedAt)) s.startedAt = startedAt;
      s.finishedAt = finishedAt;
    });
    inst.state = "exited";
    inst.values = {
      ...inst.values,
      startedAt,
      finishedAt,
      exitCode: 137,
      reason: "Error",
      message: "",
    };
  }
}

/** Options of {@linkcode startSimulatedRuntime}. */
export interface StartSimulatedRuntimeOptions {
  /** The node to serve as a CRI runtime. */
  node: SimulatedNode;
  /** Where to serve `runtime.v1.RuntimeService`: an absolute UNIX socket path. */
  socketPath: string;
  /** Time of each sync. @default {node.clock} */
  clock?: Clock;
  /** Milliseconds between syncs (real timer). @default {1000} */
  syncPeriodMs?: number;
  /** Stops the syncs and the server when aborted. */
  signal?: AbortSignal;
  /** `runtimeName` of Version, the container ID prefix. @default {"pods-api-simulated"} */
  runtimeName?: string;
  /** Whether GetContainerEvents is served (false: UNIMPLEMENTED, as containerd 1.6). @default {true} */
  eventsImplemented?: boolean;
  log?: Logger;
}

/** A simulated node served as a CRI runtime; close it (or `await using`) to stop. */
export class SimulatedRuntime implements AsyncDisposable {
  /** The in-memory runtime (its controls stay usable: `down`, `failNext`, ...). */
  readonly runtime: SimCriRuntime;
  /** The bridge that keeps it in step with the node. */
  readonly bridge: SimCriBridge;
  /** The gRPC server on the socket. */
  readonly server: CriServer;
  /** `unix://<socketPath>`, for `--container-runtime-endpoint` or a `CriClient`. */
  readonly endpoint: string;
  readonly #controller: AbortController;
  readonly #loop: Promise<void>;
  #closed: Promise<void> | undefined;

  /**
   * Use {@linkcode startSimulatedRuntime}.
   *
   * @param parts The runtime, bridge, server, the loop's controller and the loop.
   */
  constructor(parts: {
    runtime: SimCriRuntime;
    bridge: SimCriBridge;
    server: CriServer;
    controller: AbortController;
    loop: Promise<void>;
  }) {
    this.runtime = parts.runtime;
    this.bridge = parts.bridge;
    this.server = parts.server;
    this.endpoint = parts.server.endpoint;
    this.#controller = parts.controller;
    this.#loop = parts.loop;
  }

  /** Stops the syncs (waiting for one in progress) and the server; idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#controller.abort();
      await this.#loop;
      await this.server.close();
    })();
    return this.#closed;
  }

  /** Same as {@linkcode SimulatedRuntime.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

async function syncLoop(
  bridge: SimCriBridge,
  options: { clock: Clock; periodMs: number; signal: AbortSignal; log: Logger },
): Promise<void> {
  const { clock, periodMs, signal, log } = options;
  while (!signal.aborted) {
    await abortableSleep(periodMs, signal);
    if (signal.aborted) break;
    try {
      const result = await bridge.sync(clock.now());
      if (result.failed > 0) log.warn("simulated runtime sync incomplete", { ...result });
    } catch (err) {
      log.warn("simulated runtime sync failed", { error: String(err) });
    }
  }
}

/**
 * Serves a simulated node as a CRI runtime: a {@linkcode SimCriRuntime}
 * filled from the node (first sync before the socket opens, so the first
 * relist sees every pod), served on `socketPath`, and synced again every
 * `syncPeriodMs` of real time at `clock.now()`.
 *
 * @example Usage
 * ```ts ignore
 * import { SimulatedNode } from "../node/simulated_node.ts";
 * import { startSimulatedRuntime } from "./sim_cri_bridge.ts";
 * import { systemClock as clock } from "../../clock.ts";
 * const node = new SimulatedNode({ clock, pods: 30 });
 * await using sim = await startSimulatedRuntime({ node, socketPath: "/tmp/sim-cri.sock" });
 * sim.endpoint; // "unix:///tmp/sim-cri.sock"
 * ```
 *
 * @param options Node, socket, clock, period, stop signal, runtime name, logger.
 * @returns The running runtime.
 * @throws {RangeError} When `syncPeriodMs` is not a positive finite number.
 * @throws {TypeError} When the socket path is not absolute.
 * @throws {Error} When the socket cannot be bound.
 */
export async function startSimulatedRuntime(
  options: StartSimulatedRuntimeOptions,
): Promise<SimulatedRuntime> {
  const periodMs = options.syncPeriodMs ?? 1000;
  if (!(Number.isFinite(periodMs) && periodMs > 0)) {
    throw new RangeError(`Sync period must be a positive number of ms: got "${periodMs}"`);
  }
  const clock = options.clock ?? options.node.clock;
  const log = options.log ?? silentLogger;
  const runtime = new SimCriRuntime({
    clock,
    runtimeName: options.runtimeName,
    eventsImplemented: options.eventsImplemented,
  });
  const bridge = new SimCriBridge({ node: options.node, runtime, log });
  await bridge.sync(clock.now());
  const server = await startCriServer(runtime, {
    socketPath: options.socketPath,
    eventsImplemented: options.eventsImplemented,
  });
  const controller = new AbortController();
  const external = options.signal;
  const onAbort = () => void sim.close();
  const loop = syncLoop(bridge, { clock, periodMs, signal: controller.signal, log })
    .finally(() => external?.removeEventListener("abort", onAbort));
  const sim = new SimulatedRuntime({ runtime, bridge, server, controller, loop });
  if (external?.aborted) await sim.close();
  else external?.addEventListener("abort", onAbort, { once: true });
  return sim;
}
