/**
 * A simulated Kubernetes node: realistic pods that change over clock time,
 * for the demo (`pods-api serve --simulate`), the tests and the benchmarks.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";
import type { JsonObject } from "../../model/json.ts";
import { POD_PHASE, type PodMetadata, type PodObject } from "../../model/pod.ts";
import { IndexedSet } from "./_indexed_set.ts";
import { IpPool } from "../_ip_pool.ts";
import {
  crashContainer,
  type Exit,
  finishContainer,
  isCrashLooping,
  randomFailure,
  restartRunning,
  startContainer,
  waitingStatus,
} from "./_lifecycle.ts";
import { nameSuffix, templateHash } from "./_names.ts";
import {
  type NodeIdentity,
  type PodIdentity,
  renderMetadata,
  renderSpec,
  type Workload,
} from "./_pod_templates.ts";
import { hashString, Prng, stableHex } from "../_prng.ts";
import { deriveStatus, type PodRuntime } from "./_status.ts";
import { qosClassOf } from "../../status/mod.ts";
import { numericDefault } from "../../config_flags.ts";
import { WORKLOADS, type WorkloadTemplate } from "./_workloads.ts";
import {
  DEFAULT_NAMESPACES,
  MUTATION_KINDS,
  type MutationKind,
  type SimulatedNodeOptions,
  validateNodeOptions,
} from "./simulated_node_options.ts";

export {
  DEFAULT_NAMESPACES,
  MUTATION_KINDS,
  type MutationKind,
  type SimulatedNodeOptions,
} from "./simulated_node_options.ts";

interface SimPod {
  readonly workload: Workload;
  readonly identity: PodIdentity;
  readonly qosClass: string;
  readonly runtime: PodRuntime;
  readonly pod: PodObject;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const COMPLETED: Exit = { exitCode: 0, reason: "Completed" };

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}

function isJob(w: Workload): boolean {
  return w.template.kind === "Job" || w.template.kind === "CronJob";
}

/**
 * A node whose pods live, restart, crash, finish and go away as clock time
 * passes. Deterministic: the pods depend only on the options and on the
 * clock times passed to {@linkcode SimulatedNode.advanceTo} (not on how the
 * time is split between calls). Each change makes a new pod object (frozen,
 * copy-on-write: untouched parts are shared); unchanged pods keep their
 * identity across calls.
 *
 * @example Usage
 * ```ts
 * import { SimulatedNode } from "./simulated_node.ts";
 * import { FakeClock } from "../../clock.ts";
 * const clock = new FakeClock(Date.UTC(2025, 0, 1));
 * const node = new SimulatedNode({ clock, pods: 20, seed: 7 });
 * clock.advance(60_000);
 * node.advanceTo(clock.now());
 * console.log(node.pods().length, node.mutations);
 * ```
 */
export class SimulatedNode {
  /** The node's name (`spec.nodeName` of its pods). */
  readonly nodeName: string;
  /** The node's IP. */
  readonly hostIP: string;
  /** The clock the node was built with. */
  readonly clock: Clock;
  /** The pod count churn steers towards. */
  readonly targetPods: number;
  /** Mutations per second of clock time. */
  readonly churnPerSecond: number;

  #prng: Prng;
  #node: NodeIdentity;
  #staticWorkload: Workload | undefined;
  #daemonSets: Workload[] = [];
  #creatable: Workload[] = [];
  #ips: IpPool;
  #pods = new Map<string, SimPod>();
  #uids = new Set<string>();
  #names = new Set<string>();
  #jobNames = new Set<string>();
  #daemonPods = new Map<string, string>();
  #pending = new IndexedSet();
  #running = new IndexedSet();
  #runningJobs = new IndexedSet();
  #finished = new IndexedSet();
  #crashing = new IndexedSet();
  #deletable = new IndexedSet();
  #list: readonly PodObject[] | undefined;
  #startMs: number;
  #lastMs: number;
  #scheduled = 0;
  #skipped = 0;
  #maxPerAdvance: number;
  #counts: Record<MutationKind, number> = {
    create: 0,
    start: 0,
    restart: 0,
    crashLoop: 0,
    finish: 0,
    delete: 0,
    relabel: 0,
  };

  /**
   * Builds the node and its initial pods, back-dated as if it had been
   * running for weeks. Starts no timer.
   *
   * @param options Clock, size, churn, seed and identity.
   * @throws {RangeError} For a negative pod count or churn, an empty namespace list.
   * @throws {TypeError} For a malformed node name, namespace or host IP.
   */
  constructor(options: SimulatedNodeOptions) {
    validateNodeOptions(options);
    this.clock = options.clock;
    this.nodeName = options.nodeName ?? "sim-node-1";
    this.hostIP = options.hostIP ?? "10.0.0.10";
    this.targetPods = options.pods ?? numericDefault("simulate-pods");
    this.churnPerSecond = options.churnPerSecond ?? numericDefault("simulate-churn");
    this.#maxPerAdvance = options.maxMutationsPerAdvance ?? 100_000;
    const seed = options.seed ?? numericDefault("simulate-seed");
    this.#prng = new Prng(seed);
    this.#ips = new IpPool({ prefix: "10.244", block: hashString(this.nodeName) & 0xff });
    this.#node = { nodeName: this.nodeName, nodeUid: this.#prng.uuid() };
    this.#placeWorkloads(options.namespaces ?? DEFAULT_NAMESPACES, seed);
    this.#startMs = this.clock.now();
    this.#lastMs = this.#startMs;
    this.#populate();
  }

  /** Mutations applied so far (each changed, added or removed exactly one pod). */
  get mutations(): number {
    let total = 0;
    for (const kind of MUTATION_KINDS) total += this.#counts[kind];
    return total;
  }

  /** Mutations that fell due but were skipped because the clock jumped too far. */
  get skippedMutations(): number {
    return this.#skipped;
  }

  /**
   * @returns How many mutations of each kind were applied so far.
   */
  mutationCounts(): Readonly<Record<MutationKind, number>> {
    return { ...this.#counts };
  }

  /**
   * The current pods, in a stable order. The array and the pods are frozen;
   * the same array is returned until something changes.
   *
   * @returns Every pod of the node.
   */
  pods(): readonly PodObject[] {
    if (this.#list === undefined) {
      const list: PodObject[] = [];
      for (const sim of this.#pods.values()) list.push(sim.pod);
      this.#list = Object.freeze(list);
    }
    return this.#list;
  }

  /**
   * Applies the churn due between the previous call (or construction) and
   * `nowMs`: `churnPerSecond` mutations per second, each stamped with its
   * own due time. A time at or before the previous one changes nothing.
   *
   * @param nowMs Clock time in epoch milliseconds.
   * @returns How many mutations this call applied.
   * @throws {TypeError} When `nowMs` is not a finite number.
   */
  advanceTo(nowMs: number): number {
    if (!Number.isFinite(nowMs)) {
      throw new TypeError(`Time must be a finite number: got "${nowMs}"`);
    }
    if (nowMs <= this.#lastMs) return 0;
    this.#lastMs = nowMs;
    if (this.churnPerSecond === 0) return 0;
    const due = Math.floor(((nowMs - this.#startMs) * this.churnPerSecond) / 1000);
    const backlog = due - this.#scheduled;
    if (backlog > this.#maxPerAdvance) {
      this.#skipped += backlog - this.#maxPerAdvance;
      this.#scheduled = due - this.#maxPerAdvance;
    }
    let applied = 0;
    while (this.#scheduled < due) {
      this.#scheduled++;
      const at = this.#startMs + Math.floor((this.#scheduled * 1000) / this.churnPerSecond);
      this.#mutate(at);
      applied++;
    }
    return applied;
  }

  // --- set-up ------------------------------------------------------------

  #placeWorkloads(namespaces: readonly string[], seed: number): void {
    const known = new Set(namespaces);
    const templates: WorkloadTemplate[] = [...WORKLOADS];
    const used = new Set(WORKLOADS.map((t) => t.namespace));
    const generic = WORKLOADS.find((t) => t.name === "frontend")!;
    for (const ns of namespaces) {
      if (!used.has(ns)) templates.push({ ...generic, name: "web", namespace: ns, weight: 2 });
    }
    for (const t of templates) {
      const namespace = known.has(t.namespace)
        ? t.namespace
        : namespaces[hashString(t.name) % namespaces.length]!;
      const hash = t.kind === "Static"
        ? stableHex(`${seed}/${this.nodeName}/${t.name}`, 32)
        : templateHash(`${seed}/${namespace}/${t.name}`);
      const w: Workload = { template: t, namespace, ownerUid: this.#prng.uuid(), hash };
      if (t.kind === "Static") this.#staticWorkload = w;
      else if (t.kind === "DaemonSet") this.#daemonSets.push(w);
      else this.#creatable.push(w);
    }
  }

  #populate(): void {
    const plan: Workload[] = [];
    if (this.#staticWorkload && plan.length < this.targetPods) plan.push(this.#staticWorkload);
    for (const ds of this.#daemonSets) if (plan.length < this.targetPods) plan.push(ds);
    const weights = this.#creatable.map((w) => w.template.weight);
    while (plan.length < this.targetPods) {
      plan.push(this.#creatable[this.#prng.weighted(weights)]!);
    }
    const nodeAge = this.#prng.int(20, 90) * DAY;
    for (const w of plan) this.#commit(this.#backfill(w, nodeAge));
    this.#list = undefined;
  }

  /** Builds a pod as it would look now after a back-dated life. */
  #backfill(w: Workload, nodeAge: number): SimPod {
    const now = this.#startMs;
    const p = this.#prng;
    if (p.chance(isJob(w) ? 0.05 : 0.03) && w.template.kind !== "Static") {
      return this.#create(w, now - p.int(1, 20) * SECOND);
    }
    if (isJob(w)) {
      const running = p.chance(0.35);
      const created = now - (running ? p.int(30, 900) : p.int(10, 180) * 60) * SECOND;
      let sim = this.#start(this.#create(w, created), created + p.int(2, 10) * SECOND);
      if (!running) {
        const end = Math.min(now, sim.runtime.startTimeMs + p.int(20, 600) * SECOND);
        sim = this.#finish(sim, end);
      }
      return sim;
    }
    let created: number;
    if (w.template.kind === "Static") created = now - nodeAge + 20 * SECOND;
    else if (w.template.kind === "DaemonSet") {
      created = now - p.int(60, nodeAge / SECOND - 60) * SECOND;
    } else created = now - Math.floor(10 * MINUTE * Math.pow(14 * DAY / (10 * MINUTE), p.next()));
    let sim = this.#start(this.#create(w, created), created + p.int(2, 25) * SECOND);
    const since = sim.runtime.startTimeMs + 30 * SECOND;
    if (p.chance(0.2) && since < now - MINUTE) {
      for (const at of this.#timesBetween(since, now - MINUTE, p.int(1, 3))) {
        sim = this.#restart(sim, p.int(0, sim.runtime.statuses.length - 1), at);
      }
    }
    if (p.chance(0.04) && w.template.restartPolicy === "Always") {
      const index = p.int(0, sim.runtime.statuses.length - 1);
      const from = now - p.int(5, 40) * MINUTE;
      for (const at of this.#timesBetween(Math.max(from, since), now, p.int(2, 9))) {
        sim = this.#crash(sim, index, at);
      }
    }
    return sim;
  }

  #timesBetween(fromMs: number, toMs: number, count: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push(this.#prng.int(fromMs, toMs));
    return out.sort((a, b) => a - b);
  }

  // --- pod transitions (pure but for the generator and the IP pool) -------

  #identity(w: Workload, atMs: number): PodIdentity {
    const p = this.#prng;
    const t = w.template;
    let uid = p.uuid();
    while (this.#uids.has(uid)) uid = p.uuid();
    // The kubelet makes a static pod's UID its config hash (what the
    // `kubernetes.io/config.hash` annotation holds, and the mirror pod's
    // `kubernetes.io/config.mirror`). The draw above still happens, so the
    // other pods of a seed stay as they were.
    if (t.kind === "Static") uid = w.hash;
    let job: PodIdentity["job"];
    if (t.kind === "CronJob") {
      let minute = Math.floor(atMs / MINUTE);
      while (this.#jobNames.has(`${w.namespace}/${t.name}-${minute}`)) minute--;
      job = { name: `${t.name}-${minute}`, uid: p.uuid() };
    } else if (t.kind === "Job") {
      job = { name: `${t.name}-${nameSuffix(p)}`, uid: p.uuid() };
    }
    let name: string;
    do {
      switch (t.kind) {
        case "Static":
          name = `${t.name}-${this.nodeName}`;
          break;
        case "Deployment":
          name = `${t.name}-${w.hash}-${nameSuffix(p)}`;
          break;
        case "DaemonSet":
          name = `${t.name}-${nameSuffix(p)}`;
          break;
        default:
          name = `${job!.name}-${nameSuffix(p)}`;
      }
    } while (this.#names.has(`${w.namespace}/${name}`) && t.kind !== "Static");
    return { uid, name, createdAtMs: atMs, tokenSuffix: nameSuffix(p), job };
  }

  #create(w: Workload, atMs: number): SimPod {
    const identity = this.#identity(w, atMs);
    this.#uids.add(identity.uid);
    this.#names.add(`${w.namespace}/${identity.name}`);
    if (identity.job) this.#jobNames.add(`${w.namespace}/${identity.job.name}`);
    const spec = renderSpec(w, identity, this.#node);
    const metadata = renderMetadata(w, identity, this.#node);
    const init = (spec.initContainers ?? []) as JsonObject[];
    const reason = init.length > 0 ? "PodInitializing" : "ContainerCreating";
    const runtime: PodRuntime = {
      initStatuses: init.map((c) => waitingStatus(c, reason)),
      statuses: (spec.containers as JsonObject[]).map((c) => waitingStatus(c, reason)),
      sandboxReady: false,
      startTimeMs: atMs,
    };
    const qosClass = qosClassOf(spec);
    const sim = { workload: w, identity, qosClass, runtime, pod: { metadata, spec } };
    return this.#withRuntime(sim, runtime, atMs);
  }

  #withRuntime(sim: SimPod, runtime: PodRuntime, atMs: number): SimPod {
    const status = deriveStatus({
      restartPolicy: sim.workload.template.restartPolicy,
      runtime,
      prev: sim.pod.status,
      nowMs: atMs,
      hostIP: this.hostIP,
      qosClass: sim.qosClass,
    });
    return { ...sim, runtime, pod: { metadata: sim.pod.metadata, spec: sim.pod.spec, status } };
  }

  #start(sim: SimPod, atMs: number): SimPod {
    const p = this.#prng;
    const podIP = sim.workload.template.hostNetwork ? this.hostIP : this.#ips.allocate();
    const initStatuses = sim.runtime.initStatuses.map((s) => ({
      ...finishContainer(startContainer(s, atMs, p, { ready: false, restarted: false }), atMs, {
        exitCode: 0,
        reason: "Completed",
      }),
      ready: true,
    }));
    const statuses = sim.runtime.statuses.map((s) =>
      startContainer(s, atMs, p, { ready: true, restarted: false })
    );
    return this.#withRuntime(
      sim,
      { ...sim.runtime, initStatuses, statuses, sandboxReady: true, podIP },
      atMs,
    );
  }

  #replaceStatus(sim: SimPod, index: number, status: JsonObject, atMs: number): SimPod {
    const statuses = [...sim.runtime.statuses];
    statuses[index] = status;
    return this.#withRuntime(sim, { ...sim.runtime, statuses }, atMs);
  }

  #restart(sim: SimPod, index: number, atMs: number): SimPod {
    const p = this.#prng;
    const before = sim.runtime.statuses[index]!;
    const after = isCrashLooping(before)
      ? startContainer(before, atMs, p, { ready: true, restarted: true })
      : restartRunning(before, atMs, p.chance(0.2) ? COMPLETED : randomFailure(p), p);
    return this.#replaceStatus(sim, index, after, atMs);
  }

  #crash(sim: SimPod, index: number, atMs: number): SimPod {
    const { name, namespace, uid } = sim.pod.metadata;
    const after = crashContainer(sim.runtime.statuses[index]!, atMs, randomFailure(this.#prng), {
      podRef: `${name}_${namespace}(${uid})`,
      prng: this.#prng,
    });
    return this.#replaceStatus(sim, index, after, atMs);
  }

  #finish(sim: SimPod, atMs: number): SimPod {
    const t = sim.workload.template;
    const failed = t.restartPolicy === "Never" && this.#prng.chance(t.failureRate ?? 0);
    const exit = failed ? randomFailure(this.#prng) : COMPLETED;
    const statuses = sim.runtime.statuses.map((s) => finishContainer(s, atMs, exit));
    // A finished pod's sandbox is torn down; its IPs stay in the status.
    return this.#withRuntime(sim, { ...sim.runtime, statuses, sandboxReady: false }, atMs);
  }

  #relabel(sim: SimPod): SimPod {
    const p = this.#prng;
    const meta = sim.pod.metadata;
    const op = p.int(0, 2);
    let metadata: PodMetadata;
    if (op === 1) {
      const annotations = { ...(meta.annotations ?? {}) };
      annotations["prometheus.io/scrape"] = annotations["prometheus.io/scrape"] === "true"
        ? "false"
        : "true";
      metadata = { ...meta, annotations };
    } else if (op === 2 && sim.workload.template.kind === "Deployment") {
      const annotations = { ...(meta.annotations ?? {}) };
      const key = "controller.kubernetes.io/pod-deletion-cost";
      let cost = String(p.int(-100, 100));
      if (cost === annotations[key]) cost = String(Number(cost) + 1);
      annotations[key] = cost;
      metadata = { ...meta, annotations };
    } else {
      const labels = { ...(meta.labels ?? {}) };
      if (labels.canary === undefined) labels.canary = "true";
      else delete labels.canary;
      metadata = { ...meta, labels };
    }
    return { ...sim, pod: { ...sim.pod, metadata } };
  }

  // --- bookkeeping --------------------------------------------------------

  /** Stores a pod's new state (or removal, with `undefined`) and re-indexes it. */
  #commit(sim: SimPod | undefined, uid = sim?.identity.uid): void {
    if (uid === undefined) return;
    for (const set of this.#sets()) set.delete(uid);
    this.#list = undefined;
    if (sim === undefined) {
      this.#pods.delete(uid);
      return;
    }
    deepFreeze(sim.pod);
    this.#pods.set(uid, sim);
    const kind = sim.workload.template.kind;
    if (kind === "DaemonSet") this.#daemonPods.set(sim.workload.template.name, uid);
    if (kind !== "Static") this.#deletable.add(uid);
    const phase = sim.pod.status?.phase;
    if (phase === POD_PHASE.pending) this.#pending.add(uid);
    else if (phase === POD_PHASE.running) {
      this.#running.add(uid);
      if (isJob(sim.workload)) this.#runningJobs.add(uid);
      if (sim.runtime.statuses.some(isCrashLooping)) this.#crashing.add(uid);
    } else this.#finished.add(uid);
  }

  #sets(): IndexedSet[] {
    return [
      this.#pending,
      this.#running,
      this.#runningJobs,
      this.#finished,
      this.#crashing,
      this.#deletable,
    ];
  }

  #remove(sim: SimPod): void {
    const { workload: w, identity, runtime } = sim;
    this.#names.delete(`${w.namespace}/${identity.name}`);
    if (identity.job) this.#jobNames.delete(`${w.namespace}/${identity.job.name}`);
    if (runtime.podIP && !w.template.hostNetwork) this.#ips.release(runtime.podIP);
    if (this.#daemonPods.get(w.template.name) === identity.uid) {
      this.#daemonPods.delete(w.template.name);
    }
    this.#commit(undefined, identity.uid);
  }

  // --- churn --------------------------------------------------------------

  #mutate(atMs: number): void {
    const kind = this.#chooseKind();
    const applied = this.#apply(kind, atMs) ?? this.#apply("relabel", atMs) ??
      this.#apply("create", atMs)!;
    this.#counts[applied]++;
  }

  #chooseKind(): MutationKind {
    const n = this.#pods.size;
    const target = this.targetPods;
    const below = n < target ? 0.3 : n === target ? 0.1 : 0.03;
    const above = n > target ? 0.3 : n === target ? 0.1 : 0.03;
    const weights: Record<MutationKind, number> = {
      create: below,
      start: this.#pending.size > 0 ? 0.25 : 0,
      restart: 0.12,
      crashLoop: 0.04,
      finish: this.#runningJobs.size > 0 ? 0.1 : 0,
      delete: above + (this.#finished.size > 0 ? 0.05 : 0),
      relabel: 0.14,
    };
    return MUTATION_KINDS[this.#prng.weighted(MUTATION_KINDS.map((k) => weights[k]))]!;
  }

  /** Applies one mutation of `kind`; `undefined` when nothing fits it. */
  #apply(kind: MutationKind, atMs: number): MutationKind | undefined {
    const p = this.#prng;
    switch (kind) {
      case "create": {
        const missing = this.#daemonSets.find((w) => !this.#daemonPods.has(w.template.name));
        const weights = this.#creatable.map((w) => w.template.weight);
        const w = missing ?? this.#creatable[p.weighted(weights)]!;
        this.#commit(this.#create(w, atMs));
        return kind;
      }
      case "start": {
        const sim = this.#get(this.#pending.pick(p));
        if (!sim) return undefined;
        this.#commit(this.#start(sim, atMs));
        return kind;
      }
      case "restart": {
        const fromCrash = this.#crashing.size > 0 && p.chance(0.6);
        const sim = this.#get((fromCrash ? this.#crashing : this.#running).pick(p));
        if (!sim || sim.workload.template.restartPolicy === "Never") return undefined;
        const statuses = sim.runtime.statuses;
        const crashed = statuses.map((s, i) => isCrashLooping(s) ? i : -1).filter((i) => i >= 0);
        const index = crashed.length > 0 && fromCrash
          ? p.pick(crashed)
          : p.int(0, statuses.length - 1);
        this.#commit(this.#restart(sim, index, atMs));
        return kind;
      }
      case "crashLoop": {
        const sim = this.#get(this.#running.pick(p));
        if (!sim || sim.workload.template.restartPolicy !== "Always") return undefined;
        this.#commit(this.#crash(sim, p.int(0, sim.runtime.statuses.length - 1), atMs));
        return kind;
      }
      case "finish": {
        const sim = this.#get(this.#runningJobs.pick(p));
        if (!sim) return undefined;
        this.#commit(this.#finish(sim, atMs));
        return kind;
      }
      case "delete": {
        const fromFinished = this.#finished.size > 0 && p.chance(0.8);
        const sim = this.#get((fromFinished ? this.#finished : this.#deletable).pick(p));
        if (!sim) return undefined;
        this.#remove(sim);
        return kind;
      }
      case "relabel": {
        const sim = this.#get(this.#deletable.pick(p));
        if (!sim) return undefined;
        this.#commit(this.#relabel(sim));
        return kind;
      }
    }
  }

  #get(uid: string | undefined): SimPod | undefined {
    return uid === undefined ? undefined : this.#pods.get(uid);
  }
}
