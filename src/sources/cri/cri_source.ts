/**
 * The CRI pod source: reads the node's pods from the container runtime the
 * way the kubelet's generic PLEG does. Each {@linkcode CriPodSource.list}
 * lists sandboxes and containers (two calls), inspects only what is new or
 * changed state since the last list (and whatever failed inspection last
 * time), then rebuilds only the pods whose inputs changed. An unchanged pod is
 * returned as the very same {@linkcode PodSnapshot} object, so the cache can
 * skip it by identity: the work grows with what changed, not with the node.
 *
 * Between lists, a runtime event that carries its pod's statuses (containerd
 * 1.7+, CRI-O) is taken into the view at once, as the kubelet's evented PLEG
 * takes it into its pod cache ({@linkcode CriPodSource.watchChanges}): each
 * change reaches watchers apart, without a list. The list stays the authority.
 *
 * @module
 */

import { type Clock, systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { silentLogger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { PodSnapshot } from "../../model/pod.ts";
import { snapshotOf } from "../../model/pod.ts";
import { type PodSource, SourceUnavailableError } from "../mod.ts";
import { sameItems } from "../same_items.ts";
import {
  containerIdScheme,
  containerPodUid,
  convertPod,
  isValidCriId,
  sandboxPodUid,
  UNNAMED_RUNTIME,
} from "./convert.ts";
import type { RejectReason } from "./convert.ts";
import {
  containerItemOf,
  sameContainerStatus,
  sameSandboxStatus,
  sandboxItemOf,
} from "./_event_items.ts";
import {
  type Container,
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  type ContainerStatus,
  CRI_STATUS,
  CriCallError,
  type CriCallOptions,
  POD_SANDBOX_STATE,
  type PodSandbox,
  type PodSandboxStatus,
  type RuntimeReader,
  type RuntimeService,
} from "./_types.ts";
import { abortableSleep } from "../../sleep.ts";

/**
 * Default deadline of each CRI call one `list()` makes, in milliseconds:
 * a runtime that hangs must not stall the relist loop for the full
 * `--runtime-request-timeout`.
 */
export const DEFAULT_LIST_CALL_TIMEOUT_MS = 10_000;

/** Default number of status inspections in flight at once. */
export const DEFAULT_INSPECT_CONCURRENCY = 8;

/** Options of {@linkcode CriPodSource}. */
export interface CriPodSourceOptions {
  /** The runtime: a {@linkcode CriClient}, or an in-process fake. */
  runtime: RuntimeReader & Partial<Pick<RuntimeService, "version">>;
  /** `spec.nodeName` of every pod (the kubelet's `--hostname-override`). */
  nodeName?: string;
  /** The node's IPs, for `status.hostIP(s)` and host-network pods. */
  hostIPs?: readonly string[];
  /**
   * Container ID prefix (`containerd`, `cri-o`): the runtime name from its
   * Version. When omitted, the first list asks the runtime; a runtime that
   * gives no name (or has no Version) gets {@linkcode UNNAMED_RUNTIME}.
   */
  runtimeName?: string;
  /**
   * Deadline of each call a list makes, in milliseconds. Shorter than the
   * kubelet's 2-minute `--runtime-request-timeout` on purpose: a list runs
   * every second, and a runtime that cannot list its pods in 10 s is better
   * reported unavailable (the cache keeps the last known pods) than waited on.
   * @default {10000}
   */
  callTimeoutMs?: number;
  /** Status inspections in flight at once. @default {8} */
  inspectConcurrency?: number;
  /** `runtimeReachable`, `sourceItemsRejected` and `runtimeEvents` are updated. */
  metrics?: Pick<Metrics, "runtimeReachable" | "sourceItemsRejected" | "runtimeEvents">;
  log?: Logger;
  /**
   * The wall clock the runtime stamps its events with: an event is taken
   * into the view only when it is newer than the last list's end.
   * @default {systemClock}
   */
  clock?: Pick<Clock, "now">;
}

interface SandboxRecord {
  readonly item: PodSandbox;
  /** The pod UID it belongs to, or `undefined` when it names none validly. */
  readonly uid: string | undefined;
  readonly status: PodSandboxStatus | undefined;
  /** Inspect at the next list (new, changed, or the last inspection failed). */
  readonly inspect: boolean;
}

interface ContainerRecord {
  readonly item: Container;
  readonly status: ContainerStatus | undefined;
  readonly inspect: boolean;
}

interface PodEntry {
  /** The records the snapshot was built from (identity compared). */
  readonly inputs: ReadonlySet<SandboxRecord | ContainerRecord>;
  readonly snapshot: PodSnapshot | undefined;
}

interface PodInputs {
  readonly sandboxes: SandboxRecord[];
  readonly containers: ContainerRecord[];
}

/** The clock's resolution: a list's start is known to this much. */
const NS_PER_MS = 1e6;

/** How far on a container's state is: an event never moves one back (UNKNOWN: not at all). */
function rank(state: number): number {
  switch (state) {
    case CONTAINER_STATE.created:
      return 0;
    case CONTAINER_STATE.running:
      return 1;
    case CONTAINER_STATE.exited:
      return 2;
    default:
      return -1;
  }
}

/** How far on a sandbox's state is: READY, then NOTREADY (for good). */
function sandboxRank(state: number): number {
  return state === POD_SANDBOX_STATE.notReady ? 1 : 0;
}

/** The last list's items once an event changed the records: nothing matches them. */
const NO_ITEMS = { sandboxes: [], containers: [] } as const;

/** Failure reasons that mean the runtime did not answer. */
const NO_ANSWER_REASONS: ReadonlySet<string> = new Set(["unavailable", "timeout", "cancelled"]);

/** The metric label of this source. */
const SOURCE = "cri";

/**
 * Reads pods from a CRI runtime. Concurrent `list()` calls (the periodic
 * relist and one woken by a runtime event) are queued, one at a time, as
 * each builds on what the previous one inspected.
 *
 * @example Usage
 * ```ts ignore
 * import { CriClient } from "./client.ts";
 * import { CriPodSource } from "./cri_source.ts";
 * using client = new CriClient("unix:///run/containerd/containerd.sock");
 * const source = new CriPodSource({ runtime: client, nodeName: "node-1" });
 * const pods = await source.list(AbortSignal.timeout(30_000));
 * ```
 */
export class CriPodSource implements PodSource {
  /** Always `"cri"`. */
  readonly kind = "cri" as const;
  readonly #runtime: CriPodSourceOptions["runtime"];
  readonly #options: CriPodSourceOptions;
  readonly #log: Logger;
  readonly #callTimeoutMs: number;
  readonly #concurrency: number;
  readonly #clock: Pick<Clock, "now">;
  #runtimeName: string | undefined;
  #sandboxes = new Map<string, SandboxRecord>();
  #containers = new Map<string, ContainerRecord>();
  /** Exited containers to inspect once more (see `#recheckExit`). */
  #exitRecheck = new Set<string>();
  #pods = new Map<string, PodEntry>();
  /** The last list returned: returned again while no pod is rebuilt, added or gone. */
  #out: readonly PodSnapshot[] = [];
  /** The items the last committed list was read from, in its order. */
  #lastItems: { readonly sandboxes: readonly object[]; readonly containers: readonly object[] } = {
    sandboxes: [],
    containers: [],
  };
  /** Raw keys of items rejected at the last list, so each is counted once. */
  #rejected = new Set<string>();
  /**
   * When the last list started, in ns since the epoch (the runtime's event
   * stamps): it read the runtime after then, so an earlier event is no news.
   */
  #listedFromNs: number | undefined;
  /**
   * When the last list ended, in ns, rounded up to the clock's resolution:
   * an event stamped after then is newer than all that list read.
   */
  #listedToNs = 0;

  #queue: Promise<unknown> = Promise.resolve();

  /**
   * @param options The runtime, node facts, deadlines, metrics and logger.
   */
  constructor(options: CriPodSourceOptions) {
    this.#runtime = options.runtime;
    this.#options = options;
    this.#log = options.log ?? silentLogger;
    this.#callTimeoutMs = options.callTimeoutMs ?? DEFAULT_LIST_CALL_TIMEOUT_MS;
    this.#concurrency = Math.max(1, options.inspectConcurrency ?? DEFAULT_INSPECT_CONCURRENCY);
    this.#clock = options.clock ?? systemClock;
    this.#runtimeName = options.runtimeName;
  }

  /**
   * Lists the runtime's pods: one snapshot per pod UID. Snapshots of pods
   * whose runtime data did not change are the same objects as last time.
   *
   * @param signal Aborts the list.
   * @returns Every pod the runtime holds.
   * @throws {SourceUnavailableError} When the runtime cannot be read; `reason`
   * is `unavailable`, `timeout`, `cancelled`, `unimplemented` or `runtime_error`.
   */
  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    const run = this.#queue.then(() => this.#list(signal));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    try {
      const result = await this.#listOnce(signal);
      this.#options.metrics?.runtimeReachable.set(1);
      return result;
    } catch (err) {
      const error = toSourceError(err, signal);
      // A call the runtime answered, even with an error, proves it reachable;
      // no answer in time (or a list cut short) does not.
      const reachable = !NO_ANSWER_REASONS.has(error.reason);
      this.#options.metrics?.runtimeReachable.set(reachable ? 1 : 0);
      throw error;
    }
  }

  async #listOnce(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    signal.throwIfAborted();
    const startedNs = this.#nowNs();
    const call = (): CriCallOptions => ({ signal, timeoutMs: this.#callTimeoutMs });
    if (this.#runtimeName === undefined) this.#runtimeName = await this.#askRuntimeName(call());
    // The items of settled records that the runtime lists unchanged are
    // kept below as they are: the client need not decode them again.
    const [sandboxList, containerList] = await Promise.all([
      this.#runtime.listPodSandbox({}, {
        ...call(),
        reuse: (id, state, createdAt) => settledItem(this.#sandboxes.get(id), state, createdAt),
      }),
      this.#runtime.listContainers({}, {
        ...call(),
        reuse: (id, state, createdAt) => settledItem(this.#containers.get(id), state, createdAt),
      }),
    ]);
    const sandboxItems = sandboxList.items ?? [];
    const containerItems = containerList.containers ?? [];
    // Every item listed is the one held for it (settled: inspected, same
    // state and creation time), in the order of the last list, and no exit is
    // to be looked at again: the steps below would rebuild the same records
    // and pods, and return the last list. A quiet runtime answers so at every
    // relist; this is most of their cost saved (the maps, the grouping).
    if (
      this.#exitRecheck.size === 0 &&
      sameItems(sandboxItems, this.#lastItems.sandboxes) &&
      sameItems(containerItems, this.#lastItems.containers)
    ) {
      signal.throwIfAborted();
      this.#listed(startedNs);
      return this.#out;
    }
    const rejected = new Set<string>();
    const reject = (key: string, reason: RejectReason, detail: string) => {
      rejected.add(key);
      if (!this.#rejected.has(key)) this.#reject(reason, detail);
    };

    // 1. Match listed items with known records: same state and creation time
    // keeps the record (and its inspected status) as is.
    const sandboxes = new Map<string, SandboxRecord>();
    for (const item of sandboxItems) {
      const id = item.id;
      const known = this.#sandboxes.get(id);
      // A known ID was validated when first seen.
      if (known === undefined && !isValidCriId(id)) {
        reject(`sandbox-id:${String(id)}`, "invalid_id", `sandbox ID ${JSON.stringify(id)}`);
        continue;
      }
      if (sandboxes.has(id)) {
        reject(`sandbox-dup:${id}`, "duplicate_id", `sandbox ${JSON.stringify(id)} listed twice`);
        continue;
      }
      sandboxes.set(
        id,
        known && !known.inspect && known.item.state === item.state &&
          known.item.createdAt === item.createdAt
          ? known
          : { item, uid: sandboxPodUid(item), status: known?.status, inspect: true },
      );
    }
    const containers = new Map<string, ContainerRecord>();
    for (const item of containerItems) {
      const id = item.id;
      const known = this.#containers.get(id);
      if (known === undefined && !isValidCriId(id)) {
        reject(`container-id:${String(id)}`, "invalid_id", `container ID ${JSON.stringify(id)}`);
        continue;
      }
      if (containers.has(id)) {
        reject(
          `container-dup:${id}`,
          "duplicate_id",
          `container ${JSON.stringify(id)} listed twice`,
        );
        continue;
      }
      containers.set(
        id,
        known && !known.inspect && known.item.state === item.state &&
          known.item.createdAt === item.createdAt
          ? known
          : { item, status: known?.status, inspect: true },
      );
    }

    // 2. Inspect what is new or changed (and exits to look at once more).
    const exitRecheck = new Set(this.#exitRecheck);
    await this.#inspectAll(sandboxes, containers, exitRecheck, signal);

    // 3. Group by pod UID; rebuild only pods whose set of records changed.
    const groups = new Map<string, PodInputs>();
    const uidBySandbox = new Map<string, string>();
    for (const [id, record] of sandboxes) {
      const uid = record.uid;
      if (uid === undefined) {
        reject(`sandbox-uid:${id}`, "invalid_identity", `sandbox ${JSON.stringify(id)} has no UID`);
        continue;
      }
      uidBySandbox.set(id, uid);
      const group = groups.get(uid);
      if (group === undefined) groups.set(uid, { sandboxes: [record], containers: [] });
      else group.sandboxes.push(record);
    }
    for (const record of containers.values()) {
      const uid = uidBySandbox.get(record.item.podSandboxId) ?? containerPodUid(record.item);
      if (uid !== undefined) groups.get(uid)?.containers.push(record);
    }

    const pods = new Map<string, PodEntry>();
    const fresh: PodSnapshot[] = [];
    let rebuilt = groups.size !== this.#pods.size;
    for (const [uid, group] of groups) {
      const known = this.#pods.get(uid);
      const entry = known !== undefined && sameInputs(known.inputs, group)
        ? known
        : this.#build(uid, group);
      if (entry !== known) rebuilt = true;
      pods.set(uid, entry);
      if (entry.snapshot !== undefined) fresh.push(entry.snapshot);
    }
    // Nothing changed: the very list of last time, so that the merge, the
    // cache and the checks downstream see it is the same and pass it by.
    const out = rebuilt ? fresh : this.#out;

    // Commit, unless the list was given up on: its view will never be used,
    // and the next list must build on what the last used one saw.
    signal.throwIfAborted();
    this.#sandboxes = sandboxes;
    this.#containers = containers;
    for (const id of exitRecheck) if (!containers.has(id)) exitRecheck.delete(id);
    this.#exitRecheck = exitRecheck;
    this.#pods = pods;
    this.#out = out;
    this.#rejected = rejected;
    this.#lastItems = { sandboxes: sandboxItems, containers: containerItems };
    this.#listed(startedNs);
    return out;
  }

  /** Records when the list just committed read the runtime: from `startedNs` to now. */
  #listed(startedNs: number): void {
    this.#listedFromNs = startedNs;
    this.#listedToNs = this.#nowNs() + NS_PER_MS;
  }

  #nowNs(): number {
    return this.#clock.now() * 1e6;
  }

  /**
   * The view as the last list left it and the events taken in since: what
   * `list()` would return, without reading the runtime.
   *
   * @returns One snapshot per pod.
   */
  view(): readonly PodSnapshot[] {
    return this.#out;
  }

  /**
   * Takes one runtime event into the view, as the kubelet's evented PLEG
   * takes it into its pod cache, between lists (queued with them). The event
   * carries its sandbox's status and those of all its containers as of its
   * stamp. Stamped after the last list ended, it is newer than all that list
   * read: its statuses replace what is held for the sandbox, a held
   * container of the sandbox made before the event and not in it is gone,
   * and the sandbox's own DELETED event removes it and its containers.
   * Stamped while the list read, it may be older than what the list saw, so
   * it only moves things on: a sandbox READY to NOTREADY, a container
   * CREATED, RUNNING, EXITED; and it adds nothing made before the list
   * started (the list found it gone). Stamped before the list started, it is
   * `covered` (the list read its change, or later ones). One without
   * statuses, or with what a list would reject, is left to a `relist`.
   * (One race is left, as in the kubelet: an event stamped while a list read,
   * of a container made and removed within that read, shows it until its
   * removal's event.)
   *
   * @returns What became of it.
   */
  #take(event: ContainerEventResponse): "applied" | "covered" | "relist" {
    const sandbox = event.podSandboxStatus;
    if (
      this.#listedFromNs === undefined || sandbox === null || !isValidCriId(sandbox.id) ||
      !event.containersStatuses.every((c) => isValidCriId(c.id))
    ) {
      return "relist";
    }
    if (event.createdAt <= this.#listedFromNs) return "covered";
    const sure = event.createdAt > this.#listedToNs;
    const sandboxId = sandbox.id;
    const known = this.#sandboxes.get(sandboxId);
    if (known === undefined && !sure) {
      const made = this.#madeWhen(sandbox.createdAt);
      if (made === "before") return "covered";
      if (made === "unsure") return "relist";
    }
    let unsure = false;
    let changed = false;
    let uid: string | undefined;
    if (
      event.containerEventType === CONTAINER_EVENT_TYPE.deleted && event.containerId === sandboxId
    ) {
      uid = known?.uid;
      changed = this.#sandboxes.delete(sandboxId);
      if (this.#dropContainersOf(sandboxId, () => true)) changed = true;
    } else {
      const item = sandboxItemOf(sandbox);
      uid = sandboxPodUid(item);
      if (uid === undefined || (known !== undefined && known.uid !== uid)) return "relist";
      const news = known === undefined ||
        (sure
          ? known.status === undefined || !sameSandboxStatus(known.status, sandbox)
          : sandboxRank(item.state) > sandboxRank(known.item.state));
      if (news) {
        this.#sandboxes.set(sandboxId, { item, uid, status: sandbox, inspect: false });
        changed = true;
      }
      const named = new Set<string>();
      for (const status of event.containersStatuses) {
        named.add(status.id);
        const taken = this.#takeContainer(status, sandboxId, sure);
        if (taken === "unsure") unsure = true;
        else if (taken === "taken") changed = true;
      }
      const dropped = this.#dropContainersOf(
        sandboxId,
        (record) => !named.has(record.item.id) && record.item.createdAt <= event.createdAt,
      );
      if (dropped) changed = true;
    }
    if (changed) {
      // The next list compares with the records, not with the last list's items.
      this.#lastItems = NO_ITEMS;
      if (uid !== undefined) this.#rebuildPod(uid);
    }
    return unsure ? "relist" : "applied";
  }

  /**
   * Adds a container from an event's status, or replaces the one held (only
   * to move it on, unless `sure` the event is newer than the last list).
   *
   * @returns `taken`, `same` (nothing new, or nothing it may change), or
   * `unsure` when it could not tell whether the last list missed it.
   */
  #takeContainer(
    status: ContainerStatus,
    sandboxId: string,
    sure: boolean,
  ): "taken" | "same" | "unsure" {
    const id = status.id;
    const held = this.#containers.get(id);
    if (held === undefined && !sure) {
      const made = this.#madeWhen(status.createdAt);
      if (made === "before") return "same";
      if (made === "unsure") return "unsure";
    } else if (
      held !== undefined &&
      (sure
        ? held.status !== undefined && sameContainerStatus(held.status, status)
        : !(rank(status.state) > rank(held.item.state)))
    ) {
      return "same";
    }
    this.#containers.set(id, { item: containerItemOf(status, sandboxId), status, inspect: false });
    // A runtime may record an exit's reason a moment after the exit.
    if (status.state === CONTAINER_STATE.exited && held?.item.state !== CONTAINER_STATE.exited) {
      this.#exitRecheck.add(id);
    }
    return "taken";
  }

  /**
   * Forgets the containers held in `sandboxId` that `isGone` picks.
   *
   * @returns Whether it forgot any.
   */
  #dropContainersOf(sandboxId: string, isGone: (record: ContainerRecord) => boolean): boolean {
    let dropped = false;
    for (const [id, record] of this.#containers) {
      if (record.item.podSandboxId !== sandboxId || !isGone(record)) continue;
      this.#containers.delete(id);
      this.#exitRecheck.delete(id);
      dropped = true;
    }
    return dropped;
  }

  /**
   * When something the last list did not find was made: `before` it started
   * (so it was gone by then), `after`, or `unsure` within the clock's
   * millisecond of the start.
   */
  #madeWhen(createdAtNs: number): "before" | "unsure" | "after" {
    const from = this.#listedFromNs!;
    return createdAtNs < from ? "before" : createdAtNs < from + NS_PER_MS ? "unsure" : "after";
  }

  /**
   * Rebuilds one pod from the records held, grouped as a list groups them,
   * and puts its snapshot in the view (in its place, at the end when new, out
   * when it has no sandbox left).
   */
  #rebuildPod(uid: string): void {
    const group: PodInputs = { sandboxes: [], containers: [] };
    for (const record of this.#sandboxes.values()) {
      if (record.uid === uid) group.sandboxes.push(record);
    }
    if (group.sandboxes.length > 0) {
      for (const record of this.#containers.values()) {
        const owner = this.#sandboxes.get(record.item.podSandboxId)?.uid;
        if ((owner ?? containerPodUid(record.item)) === uid) group.containers.push(record);
      }
    }
    const known = this.#pods.get(uid);
    const entry = group.sandboxes.length === 0
      ? undefined
      : known !== undefined && sameInputs(known.inputs, group)
      ? known
      : this.#build(uid, group);
    if (entry === known) return;
    if (entry === undefined) this.#pods.delete(uid);
    else this.#pods.set(uid, entry);
    const before = known?.snapshot;
    const after = entry?.snapshot;
    if (before === after) return;
    const at = before === undefined ? -1 : this.#out.indexOf(before);
    const out = [...this.#out];
    if (at < 0) {
      if (after !== undefined) out.push(after);
    } else if (after === undefined) out.splice(at, 1);
    else out[at] = after;
    this.#out = out;
  }

  async #askRuntimeName(options: CriCallOptions): Promise<string> {
    if (this.#runtime.version === undefined) return UNNAMED_RUNTIME;
    const version = await this.#runtime.version({ version: "v1" }, options);
    return containerIdScheme(version.runtimeName);
  }

  /**
   * Converts one pod. Problems found in its data are reported each time it is
   * rebuilt, which happens only when its runtime data changed.
   */
  #build(uid: string, group: PodInputs): PodEntry {
    const inputs = new Set<SandboxRecord | ContainerRecord>([
      ...group.sandboxes,
      ...group.containers,
    ]);
    const pod = convertPod(
      group.sandboxes.map((r) => ({ sandbox: r.item, status: r.status })),
      group.containers.map((r) => ({ container: r.item, status: r.status })),
      {
        nodeName: this.#options.nodeName,
        hostIPs: this.#options.hostIPs,
        runtimeName: this.#runtimeName,
        onReject: (reason, detail) => this.#reject(reason, `pod ${uid}: ${detail}`),
      },
    );
    return { inputs, snapshot: pod === undefined ? undefined : snapshotOf(pod) };
  }

  #reject(reason: RejectReason, detail: string): void {
    this.#options.metrics?.sourceItemsRejected.inc({ source: SOURCE, reason });
    this.#log.warn("skipped invalid runtime data", { reason, detail });
  }

  /**
   * A runtime may record an exit's reason (containerd: OOMKilled) a moment
   * after the exit itself, so an exited container is inspected once more at
   * the next list. Its record (and so its pod's snapshot) is replaced only if
   * the exit's details changed.
   */
  async #recheckExit(
    id: string,
    record: ContainerRecord,
    containers: Map<string, ContainerRecord>,
    exitRecheck: Set<string>,
    signal: AbortSignal,
  ): Promise<void> {
    const status = await this.#inspect(
      () =>
        this.#runtime.containerStatus({ containerId: id }, {
          signal,
          timeoutMs: this.#callTimeoutMs,
        }),
      id,
    );
    if (status === "failed") return;
    exitRecheck.delete(id);
    if (status === "gone" || status.status?.id !== id) return;
    const before = record.status;
    const after = status.status;
    const same = before !== undefined && before.reason === after.reason &&
      before.exitCode === after.exitCode && before.message === after.message &&
      before.finishedAt === after.finishedAt;
    if (!same) containers.set(id, { item: record.item, status: after, inspect: false });
  }

  /**
   * Inspects what the list found new or changed, `concurrency` calls at a
   * time, into this list's own maps and recheck set (the source's state is
   * only replaced when the whole list succeeds). On the first error that
   * fails the list, no further call starts, and it rejects only once the
   * calls in flight have ended: a failed list leaves nothing running.
   */
  async #inspectAll(
    sandboxes: Map<string, SandboxRecord>,
    containers: Map<string, ContainerRecord>,
    exitRecheck: Set<string>,
    signal: AbortSignal,
  ): Promise<void> {
    const jobs: (() => Promise<void>)[] = [];
    for (const [id, record] of sandboxes) {
      if (!record.inspect) continue;
      jobs.push(async () => {
        const status = await this.#inspect(
          () =>
            this.#runtime.podSandboxStatus(
              { podSandboxId: id },
              { signal, timeoutMs: this.#callTimeoutMs },
            ),
          id,
        );
        if (status === "gone") sandboxes.delete(id);
        else if (status === "failed") sandboxes.set(id, { ...record, inspect: true });
        else if (status.status?.id !== id) {
          sandboxes.set(id, { ...record, inspect: true });
          this.#reject("invalid_status", `status of sandbox ${JSON.stringify(id)} names another`);
        } else sandboxes.set(id, { ...record, status: status.status, inspect: false });
      });
    }
    for (const [id, record] of containers) {
      if (!record.inspect) {
        if (exitRecheck.has(id)) {
          jobs.push(() => this.#recheckExit(id, record, containers, exitRecheck, signal));
        }
        continue;
      }
      jobs.push(async () => {
        const status = await this.#inspect(
          () =>
            this.#runtime.containerStatus(
              { containerId: id },
              { signal, timeoutMs: this.#callTimeoutMs },
            ),
          id,
        );
        if (status === "gone") containers.delete(id);
        else if (status === "failed") containers.set(id, { ...record, inspect: true });
        else if (status.status?.id !== id) {
          containers.set(id, { ...record, inspect: true });
          this.#reject("invalid_status", `status of container ${JSON.stringify(id)} names another`);
        } else {
          containers.set(id, { item: record.item, status: status.status, inspect: false });
          if (status.status.state === CONTAINER_STATE.exited) exitRecheck.add(id);
        }
      });
    }
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (failure === undefined && next < jobs.length) {
        try {
          await jobs[next++]!();
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, jobs.length) }, worker));
    if (failure !== undefined) throw failure.error;
  }

  /**
   * Runs one inspection. `gone`: the item vanished since the list (dropped
   * now, seen again if still listed). `failed`: any other per-item error (the
   * previous status is kept and the item re-inspected next time). An error
   * that means the runtime itself is unreachable fails the whole list.
   */
  async #inspect<T>(fn: () => Promise<T>, id: string): Promise<T | "gone" | "failed"> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof CriCallError) || isRuntimeDown(err.code)) throw err;
      if (err.code === CRI_STATUS.notFound) return "gone";
      this.#log.debug("runtime status call failed; retrying at next relist", {
        id,
        method: err.method,
        error: err,
      });
      return "failed";
    }
  }

  /**
   * Subscribes to the runtime's container events. Each is taken into the
   * view if it can be (see `#take`): `onApplied` is called when that changed
   * the view; an event the last list already covered calls nothing; any other
   * calls `onHint`, so the caller relists early. Without `onApplied`, every
   * event is a hint. The list stays the authority. On UNIMPLEMENTED
   * (containerd 1.6) it logs once at info and returns; when the stream ends
   * or fails otherwise it asks for a relist (events may be lost meanwhile)
   * and resubscribes with backoff (250 ms doubling to 30 s).
   *
   * @param signal Stops the subscription.
   * @param onHint Called for each event left to a relist.
   * @param onApplied Called for each event that changed the view, in order.
   * @returns Resolves when `signal` aborts or the runtime has no events.
   */
  async watchChanges(
    signal: AbortSignal,
    onHint: () => void,
    onApplied?: () => void,
  ): Promise<void> {
    let backoffMs = 250;
    const events = this.#options.metrics?.runtimeEvents;
    while (!signal.aborted) {
      try {
        for await (const event of this.#runtime.getContainerEvents({}, { signal })) {
          backoffMs = 250;
          if (onApplied === undefined) {
            events?.inc({ outcome: "relist" });
            onHint();
            continue;
          }
          // Queued with the lists: taken into the view the last one left.
          const take = this.#queue.then(() => {
            if (signal.aborted) return;
            const before = this.#out;
            const outcome = this.#take(event);
            events?.inc({ outcome });
            if (this.#out !== before) onApplied();
            if (outcome === "relist") onHint();
          });
          this.#queue = take.catch((error) => {
            events?.inc({ outcome: "relist" });
            this.#log.warn("could not take a runtime event in; relisting", { error });
            onHint();
          });
        }
        if (signal.aborted) return;
        this.#log.debug("container event stream ended; resubscribing", { backoffMs });
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof CriCallError && err.code === CRI_STATUS.unimplemented) {
          this.#log.info(
            "runtime does not implement GetContainerEvents; relying on periodic relist",
          );
          return;
        }
        this.#log.debug("container event stream failed; resubscribing", { backoffMs, error: err });
      }
      // Events may be lost until the stream is back: a relist reads what they said.
      onHint();
      await abortableSleep(backoffMs, signal);
      backoffMs = Math.min(backoffMs * 2, 30_000);
    }
  }
}

/**
 * A record's item when the list would keep the record as it is: inspected,
 * and listed again with the same state and creation time.
 */
function settledItem<T extends { readonly state: number; readonly createdAt: number }>(
  record: { readonly item: T; readonly inspect: boolean } | undefined,
  state: number,
  createdAt: number,
): T | undefined {
  return record !== undefined && !record.inspect && record.item.state === state &&
      record.item.createdAt === createdAt
    ? record.item
    : undefined;
}

function sameInputs(known: ReadonlySet<object>, group: PodInputs): boolean {
  if (known.size !== group.sandboxes.length + group.containers.length) return false;
  for (const r of group.sandboxes) if (!known.has(r)) return false;
  for (const r of group.containers) if (!known.has(r)) return false;
  return true;
}

function isRuntimeDown(code: number): boolean {
  return code === CRI_STATUS.unavailable || code === CRI_STATUS.deadlineExceeded ||
    code === CRI_STATUS.cancelled;
}

const REASON_BY_CODE: ReadonlyMap<number, string> = new Map([
  [CRI_STATUS.unavailable, "unavailable"],
  [CRI_STATUS.deadlineExceeded, "timeout"],
  [CRI_STATUS.cancelled, "cancelled"],
  [CRI_STATUS.unimplemented, "unimplemented"],
]);

function toSourceError(err: unknown, signal: AbortSignal): SourceUnavailableError {
  if (err instanceof SourceUnavailableError) return err;
  if (signal.aborted) {
    return new SourceUnavailableError("CRI list was aborted", {
      reason: "cancelled",
      cause: signal.reason,
    });
  }
  if (err instanceof CriCallError) {
    return new SourceUnavailableError(`CRI call "${err.method}" failed: ${err.message}`, {
      reason: REASON_BY_CODE.get(err.code) ?? "runtime_error",
      cause: err,
    });
  }
  return new SourceUnavailableError(`CRI list failed: ${String(err)}`, {
    reason: "runtime_error",
    cause: err,
  });
}
