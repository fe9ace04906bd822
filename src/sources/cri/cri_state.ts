/**
 * The CRI source's state, in one place: the sandboxes and containers last
 * read, each with the runtime time it was observed at, the pods built from
 * them, and the view served. Two synchronous writers, nothing else:
 *
 * - {@linkcode CriState.applyList} replaces the whole state with what one
 *   relist read (its lists, and the statuses it inspected or had read before
 *   of items listed unchanged). After it, the view is the view a fresh state
 *   would build from the same answers: nothing an event said survives it.
 * - {@linkcode CriState.applyEvent} takes one runtime event that carries its
 *   pod's statuses (containerd 1.7+, CRI-O) into the view, as the kubelet's
 *   evented PLEG takes it into its pod cache, and only moves a record forward
 *   in the runtime's own time. Whatever it cannot be sure of (no statuses,
 *   as containerd's sandbox DELETED; something made while the last relist
 *   read) is left to a relist.
 *
 * Records made or changed by an event are inspected again at the next
 * relist, so a relist never keeps a status it did not read.
 *
 * @module
 */

import type { PodSnapshot } from "../../model/pod.ts";
import type { ContainerProcess, RunningContainerProcess } from "../process/mod.ts";
import { snapshotOf } from "../../model/pod.ts";
import { jsonEqual } from "../pod_items.ts";
import { sameItems } from "../same_items.ts";
import {
  containerPodUid,
  convertPod,
  isValidCriId,
  type RejectReason,
  sandboxPodUid,
} from "./convert.ts";
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
  POD_SANDBOX_STATE,
  type PodSandbox,
  type PodSandboxStatus,
} from "./_types.ts";

/**
 * When a relist read the runtime, in ns since the epoch (the clock the
 * runtime stamps its events with): it read everything after `fromNs` and
 * before `toNs`.
 */
export interface ListWindow {
  readonly fromNs: number;
  readonly toNs: number;
}

/** What one inspection gave: a status, `gone` (NOT_FOUND) or `failed` (any other per-item error). */
export type Inspection<T> = T | "gone" | "failed";

/** Everything one relist read. */
export interface ListAnswers {
  readonly sandboxes: readonly PodSandbox[];
  readonly containers: readonly Container[];
  /** The sandbox statuses it inspected, by ID. */
  readonly sandboxStatuses: ReadonlyMap<string, Inspection<PodSandboxStatus>>;
  /** The container statuses it inspected, by ID. */
  readonly containerStatuses: ReadonlyMap<string, Inspection<ContainerStatus>>;
  /** The init processes the verbose inspections named, by container ID. */
  readonly containerProcesses?: ReadonlyMap<string, ContainerProcess>;
}

/** What a relist must inspect, given what it listed: see {@linkcode CriState.toInspect}. */
export interface InspectPlan {
  readonly sandboxIds: readonly string[];
  readonly containerIds: readonly string[];
}

/**
 * What became of an event: `applied` (taken in; the view may be the same),
 * `covered` (older than what the last relist read), `relist` (left to one).
 */
export type EventOutcome = "applied" | "covered" | "relist";

/** Options of {@linkcode CriState}. */
export interface CriStateOptions {
  /** `spec.nodeName` of every pod. */
  readonly nodeName?: string | undefined;
  /** The node's IPs. */
  readonly hostIPs?: readonly string[] | undefined;
  /** The container ID prefix (`containerd`, `cri-o`). */
  readonly runtimeName?: string | undefined;
  /** Called for each piece of runtime data skipped as invalid. */
  readonly onReject?: (reason: RejectReason, detail: string) => void;
}

/** A runtime record and when the runtime was observed with it. */
interface Observed {
  /** The runtime was in this state at some time from `seenFromNs` to `seenToNs`. */
  readonly seenFromNs: number;
  readonly seenToNs: number;
  /** The status was read by a relist's inspection (not given by an event). */
  readonly listed: boolean;
  /** Made by an event: its item is built from the event's status, not listed. */
  readonly byEvent: boolean;
  /** Inspect at the next relist: made or changed by an event, or its inspection failed. */
  readonly inspect: boolean;
}

interface SandboxRecord extends Observed {
  readonly item: PodSandbox;
  /** The pod UID it belongs to, or `undefined` when it names none validly. */
  readonly uid: string | undefined;
  readonly status: PodSandboxStatus | undefined;
}

interface ContainerRecord extends Observed {
  readonly item: Container;
  readonly status: ContainerStatus | undefined;
}

interface PodInputs {
  readonly sandboxes: SandboxRecord[];
  readonly containers: ContainerRecord[];
}

interface PodEntry {
  /** The items and statuses the snapshot was built from (identity compared). */
  readonly inputs: readonly object[];
  readonly snapshot: PodSnapshot | undefined;
}

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

/**
 * The state of the CRI source. Not thread-safe by design: both writers are
 * synchronous, so no write interleaves with another.
 *
 * @example Usage
 * ```ts ignore
 * const state = new CriState({ nodeName: "node-1", runtimeName: "containerd" });
 * const plan = state.toInspect(sandboxes, containers);
 * // ...inspect plan.sandboxIds and plan.containerIds...
 * state.applyList({ sandboxes, containers, sandboxStatuses, containerStatuses }, window);
 * state.applyEvent(event); // "applied", "covered" or "relist"
 * const pods = state.view();
 * ```
 */
export class CriState {
  readonly #options: CriStateOptions;
  #sandboxes = new Map<string, SandboxRecord>();
  #containers = new Map<string, ContainerRecord>();
  /** Exited containers to inspect once more: a runtime may record an exit's reason late. */
  #exitRecheck = new Set<string>();
  #pods = new Map<string, PodEntry>();
  #view: readonly PodSnapshot[] = [];
  /** Keys of items rejected at the last relist, so each is counted once. */
  #rejected = new Set<string>();
  #window: ListWindow | undefined;
  /**
   * Sandboxes and containers an event found gone since the last relist,
   * with its stamp: an older event arriving late must not bring one back.
   */
  #goneAt = new Map<string, number>();
  /** Container ID -> its init process, as a relist's verbose inspection read it. */
  #processes = new Map<string, ContainerProcess>();
  /** The running containers with a process; `undefined` after any change. */
  #running: readonly RunningContainerProcess[] | undefined;

  /** @param options Node facts, runtime name and the rejection counter. */
  constructor(options: CriStateOptions = {}) {
    this.#options = options;
  }

  /**
   * @returns One snapshot per pod: the last relist's, with the events taken in since.
   * The same array (and snapshot objects) while nothing changed.
   */
  view(): readonly PodSnapshot[] {
    return this.#view;
  }

  /**
   * The running containers whose init process an inspection named: only
   * what the state holds now (an exited or removed container is left out at
   * once, whether a relist or an event said so).
   *
   * @returns The same array while nothing was applied, a new one after.
   */
  containerProcesses(): readonly RunningContainerProcess[] {
    if (this.#running !== undefined) return this.#running;
    const out: RunningContainerProcess[] = [];
    for (const [id, record] of this.#containers) {
      const process = this.#processes.get(id);
      if (process === undefined) continue;
      if ((record.status?.state ?? record.item.state) !== CONTAINER_STATE.running) continue;
      const podUid = this.#sandboxes.get(record.item.podSandboxId)?.uid ??
        containerPodUid(record.item);
      if (podUid !== undefined) out.push({ containerId: id, podUid, ...process });
    }
    return this.#running = out;
  }

  /**
   * Whether a container held as running has no init process named yet: one
   * an event made between relists, whose process the next relist's
   * inspection would otherwise be the first to read.
   *
   * @param id The container ID.
   * @returns `true` when its process is wanted.
   */
  wantsProcess(id: string): boolean {
    const record = this.#containers.get(id);
    return record !== undefined && !this.#processes.has(id) &&
      (record.status?.state ?? record.item.state) === CONTAINER_STATE.running;
  }

  /**
   * Takes in the init process of a container {@linkcode CriState.wantsProcess}
   * named, read outside a relist; ignored once the container left or a relist
   * named its process.
   *
   * @param id The container ID.
   * @param process What its verbose status said.
   * @returns Whether it was taken.
   */
  takeProcess(id: string, process: ContainerProcess): boolean {
    if (!this.wantsProcess(id)) return false;
    this.#processes.set(id, process);
    this.#running = undefined;
    return true;
  }

  /** The window of the last relist applied, if any. */
  get window(): ListWindow | undefined {
    return this.#window;
  }

  /**
   * The item held for a sandbox when a relist listing it so would keep its
   * record: read by a relist, and listed with the same state and creation.
   *
   * @param id The sandbox ID.
   * @param state Its listed state.
   * @param createdAt Its listed creation time.
   * @returns The held item, or `undefined`.
   */
  settledSandbox(id: string, state: number, createdAt: number): PodSandbox | undefined {
    const record = this.#sandboxes.get(id);
    return record !== undefined && settled(record, state, createdAt) ? record.item : undefined;
  }

  /**
   * As {@linkcode CriState.settledSandbox}, for a container.
   *
   * @param id The container ID.
   * @param state Its listed state.
   * @param createdAt Its listed creation time.
   * @returns The held item, or `undefined`.
   */
  settledContainer(id: string, state: number, createdAt: number): Container | undefined {
    const record = this.#containers.get(id);
    return record !== undefined && settled(record, state, createdAt) && !this.#exitRecheck.has(id)
      ? record.item
      : undefined;
  }

  /**
   * What a relist that listed these must inspect: what is new, changed,
   * last given by an event or not read, and exits to look at once more.
   *
   * @param sandboxes The sandboxes listed.
   * @param containers The containers listed.
   * @returns The IDs to inspect.
   */
  toInspect(sandboxes: readonly PodSandbox[], containers: readonly Container[]): InspectPlan {
    const sandboxIds: string[] = [];
    for (const item of sandboxes) {
      const record = this.#sandboxes.get(item.id);
      if (record === undefined && !isValidCriId(item.id)) continue;
      if (record === undefined || !settled(record, item.state, item.createdAt)) {
        sandboxIds.push(item.id);
      }
    }
    const containerIds: string[] = [];
    for (const item of containers) {
      const record = this.#containers.get(item.id);
      if (record === undefined && !isValidCriId(item.id)) continue;
      if (
        record === undefined || !settled(record, item.state, item.createdAt) ||
        this.#exitRecheck.has(item.id)
      ) {
        containerIds.push(item.id);
      }
    }
    return { sandboxIds, containerIds };
  }

  /**
   * Replaces the state with what one relist read. Each listed item keeps the
   * status inspected now, or the one a relist read before when it is listed
   * unchanged; an item inspected `gone` vanished since the list and is left
   * out. The view is then the one built from these answers alone.
   *
   * @param answers The lists and the statuses inspected.
   * @param window When the relist read the runtime.
   */
  applyList(answers: ListAnswers, window: ListWindow): void {
    const rejected = new Set<string>();
    const reject = (key: string, reason: RejectReason, detail: string) => {
      rejected.add(key);
      if (!this.#rejected.has(key)) this.#reject(reason, detail);
    };
    /** An ID taken once per list: valid (or already known), and not listed twice. */
    const admitId = (
      kind: "sandbox" | "container",
      id: string,
      known: boolean,
      seen: Map<string, unknown>,
    ) => {
      if (!known && !isValidCriId(id)) {
        reject(`${kind}-id:${String(id)}`, "invalid_id", `${kind} ID ${JSON.stringify(id)}`);
        return false;
      }
      if (seen.has(id)) {
        reject(`${kind}-dup:${id}`, "duplicate_id", `${kind} ${JSON.stringify(id)} listed twice`);
        return false;
      }
      return true;
    };
    const sandboxes = new Map<string, SandboxRecord>();
    for (const item of answers.sandboxes) {
      const id = item.id;
      const known = this.#sandboxes.get(id);
      if (!admitId("sandbox", id, known !== undefined, sandboxes)) continue;
      const inspected = answers.sandboxStatuses.get(id);
      const read = this.#read(id, "sandbox", inspected, known, item, sameSandboxStatus);
      if (read === "gone") continue;
      const keep = read.keep && known !== undefined;
      sandboxes.set(id, {
        item: keep ? known.item : item,
        uid: keep ? known.uid : sandboxPodUid(item),
        status: read.status,
        seenFromNs: window.fromNs,
        seenToNs: window.toNs,
        listed: read.status !== undefined,
        byEvent: false,
        inspect: read.inspect,
      });
    }
    const containers = new Map<string, ContainerRecord>();
    const processes = new Map<string, ContainerProcess>();
    const exitRecheck = new Set<string>();
    for (const item of answers.containers) {
      const id = item.id;
      const known = this.#containers.get(id);
      if (!admitId("container", id, known !== undefined, containers)) continue;
      const inspected = answers.containerStatuses.get(id);
      const read = this.#read(id, "container", inspected, known, item, sameContainerStatus);
      if (read === "gone") continue;
      const keep = read.keep && known !== undefined;
      containers.set(id, {
        item: keep ? known.item : item,
        status: read.status,
        seenFromNs: window.fromNs,
        seenToNs: window.toNs,
        listed: read.status !== undefined,
        byEvent: false,
        inspect: read.inspect,
      });
      // An exit first read now is read once more at the next relist; this
      // read was that second look when it was pending (and not failed).
      const process = answers.containerProcesses?.get(id) ?? this.#processes.get(id);
      if (process !== undefined) processes.set(id, process);
      const pending = this.#exitRecheck.has(id);
      if (typeof inspected === "object") {
        const exitKnown = known?.listed === true && known.status?.state === CONTAINER_STATE.exited;
        if (inspected.state === CONTAINER_STATE.exited && !exitKnown && !pending) {
          exitRecheck.add(id);
        }
      } else if (pending) exitRecheck.add(id);
    }

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
    const view: PodSnapshot[] = [];
    for (const [uid, group] of groups) {
      const entry = this.#entry(uid, group);
      pods.set(uid, entry);
      if (entry.snapshot !== undefined) view.push(entry.snapshot);
    }
    this.#sandboxes = sandboxes;
    this.#containers = containers;
    this.#processes = processes;
    this.#running = undefined;
    this.#exitRecheck = exitRecheck;
    this.#pods = pods;
    this.#rejected = rejected;
    this.#window = window;
    this.#goneAt.clear();
    // The same array when every pod is: the cache downstream passes it by.
    if (!sameItems(view, this.#view)) this.#view = view;
  }

  /**
   * Takes one runtime event in. Its statuses are the sandbox's and every one
   * of its containers' as of its stamp (`createdAt`). A record is replaced
   * only by a newer observation: stamped after the runtime was last observed
   * with it, and never to an earlier state (a container CREATED, RUNNING,
   * EXITED; a sandbox READY, NOTREADY). A held container of the sandbox that
   * the event leaves out, made before its stamp, is gone. Something the last
   * relist did not list is added only when made after that relist started;
   * when the event is stamped within its read, a relist is asked for too.
   * The sandbox's own DELETED removes the pod when it carries the sandbox's
   * status, as the kubelet takes it; without one (containerd) a relist does.
   *
   * @param event The event.
   * @returns What became of it.
   */
  applyEvent(event: ContainerEventResponse): EventOutcome {
    this.#running = undefined;
    const window = this.#window;
    const sandbox = event.podSandboxStatus;
    if (
      window === undefined || sandbox === null || !isValidCriId(sandbox.id) ||
      !event.containersStatuses.every((c) => isValidCriId(c.id))
    ) {
      return "relist";
    }
    const stamp = event.createdAt;
    if (stamp <= window.fromNs) return "covered";
    const sandboxId = sandbox.id;
    if (stamp <= (this.#goneAt.get(sandboxId) ?? -Infinity)) return "covered";
    const known = this.#sandboxes.get(sandboxId);
    if (
      event.containerEventType === CONTAINER_EVENT_TYPE.deleted && event.containerId === sandboxId
    ) {
      return this.#removeSandbox(sandboxId, known, stamp);
    }
    let unsure = false;
    if (known === undefined && stamp <= window.toNs) {
      // Within the read: made before it started and not listed, it was gone.
      if (sandbox.createdAt < window.fromNs) return "covered";
      unsure = true;
    }
    const item = sandboxItemOf(sandbox);
    const uid = sandboxPodUid(item);
    if (uid === undefined || (known !== undefined && known.uid !== uid)) return "relist";
    let changed = false;
    if (
      known === undefined ||
      forward(
        known,
        sandboxRank(known.item.state),
        sandboxRank(sandbox.state),
        stamp,
        () => known.status === undefined || !sameSandboxStatus(known.status, sandbox),
      )
    ) {
      this.#sandboxes.set(sandboxId, { item, uid, status: sandbox, ...byEvent(stamp) });
      changed = true;
    }
    const named = new Set<string>();
    for (const status of event.containersStatuses) {
      named.add(status.id);
      const taken = this.#takeContainer(status, sandboxId, stamp, window);
      if (taken === "unsure") unsure = true;
      if (taken !== "same") changed = true;
    }
    for (const [id, record] of this.#containers) {
      if (
        record.item.podSandboxId !== sandboxId || named.has(id) ||
        record.item.createdAt > stamp || stamp <= record.seenFromNs
      ) {
        continue;
      }
      this.#containers.delete(id);
      this.#exitRecheck.delete(id);
      this.#goneAt.set(id, stamp);
      changed = true;
    }
    if (changed) this.#rebuildPod(uid);
    return unsure ? "relist" : "applied";
  }

  /**
   * The sandbox's own DELETED that still carries its status (as the kubelet
   * takes it, the pod leaves its cache): the sandbox and its containers are
   * gone for good (a relist that listed the sandbox read before its
   * removal), and no older event brings them back before the next relist.
   */
  #removeSandbox(id: string, known: SandboxRecord | undefined, stamp: number): EventOutcome {
    if (known === undefined) {
      this.#goneAt.set(id, stamp);
      return "covered";
    }
    this.#sandboxes.delete(id);
    this.#goneAt.set(id, stamp);
    for (const [cid, record] of this.#containers) {
      if (record.item.podSandboxId !== id) continue;
      this.#containers.delete(cid);
      this.#exitRecheck.delete(cid);
      this.#goneAt.set(cid, stamp);
    }
    if (known.uid !== undefined) this.#rebuildPod(known.uid);
    return "applied";
  }

  /**
   * Adds or moves on one container from an event's status.
   *
   * @returns `taken`, `same` (nothing newer), or `unsure` (taken, but made
   * while the last relist read: a relist must confirm it).
   */
  #takeContainer(
    status: ContainerStatus,
    sandboxId: string,
    stamp: number,
    window: ListWindow,
  ): "taken" | "same" | "unsure" {
    const held = this.#containers.get(status.id);
    let outcome: "taken" | "unsure" = "taken";
    if (held === undefined) {
      if (stamp <= (this.#goneAt.get(status.id) ?? -Infinity)) return "same";
      if (stamp <= window.toNs) {
        if (status.createdAt < window.fromNs) return "same";
        outcome = "unsure";
      }
    } else if (
      !forward(
        held,
        rank(held.item.state),
        rank(status.state),
        stamp,
        () => held.status === undefined || !sameContainerStatus(held.status, status),
      )
    ) {
      return "same";
    }
    this.#containers.set(status.id, {
      item: containerItemOf(status, sandboxId),
      status,
      ...byEvent(stamp),
    });
    return outcome;
  }

  /**
   * Reads one listed item's status from the answers: the one inspected now,
   * else the one a relist read before if the item is listed unchanged.
   */
  #read<T extends { readonly id: string }>(
    id: string,
    kind: "sandbox" | "container",
    inspected: Inspection<T> | undefined,
    known: (Observed & { readonly item: PodSandbox | Container; readonly status?: T }) | undefined,
    item: PodSandbox | Container,
    same: (held: T, next: T) => boolean,
  ): "gone" | { status: T | undefined; inspect: boolean; keep: boolean } {
    if (inspected === "gone") return "gone";
    // Only a listed item is kept: one an event made is replaced by the list's.
    const unchanged = known !== undefined && !known.byEvent && known.item.state === item.state &&
      known.item.createdAt === item.createdAt;
    if (typeof inspected === "object") {
      if (inspected.id !== id) {
        this.#reject("invalid_status", `status of ${kind} ${JSON.stringify(id)} names another`);
        return { status: undefined, inspect: true, keep: false };
      }
      // An unchanged status keeps its object: the pod need not be rebuilt.
      const reuse = unchanged && known.listed && known.status !== undefined &&
        same(known.status, inspected);
      return { status: reuse ? known.status : inspected, inspect: false, keep: unchanged };
    }
    // Not inspected (listed unchanged), or its inspection failed: only a
    // status a relist read may be kept.
    const kept = known?.listed === true ? known.status : undefined;
    return {
      status: kept,
      inspect: inspected === "failed" || !unchanged || known?.listed !== true,
      keep: unchanged,
    };
  }

  /**
   * Rebuilds one pod from the records held and puts its snapshot in the view
   * (in its place, at the end when new, out when it has no sandbox left).
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
    const entry = group.sandboxes.length === 0 ? undefined : this.#entry(uid, group);
    if (entry === undefined) this.#pods.delete(uid);
    else this.#pods.set(uid, entry);
    const before = known?.snapshot;
    const after = entry?.snapshot;
    if (before === after) return;
    const at = before === undefined ? -1 : this.#view.indexOf(before);
    const view = [...this.#view];
    if (at < 0) {
      if (after !== undefined) view.push(after);
    } else if (after === undefined) view.splice(at, 1);
    else view[at] = after;
    this.#view = view;
  }

  /** The pod built from `group`: the one held when built from the very same items and statuses. */
  #entry(uid: string, group: PodInputs): PodEntry {
    const inputs: object[] = [];
    for (const r of group.sandboxes) inputs.push(r.item, r.status ?? r);
    for (const r of group.containers) inputs.push(r.item, r.status ?? r);
    const known = this.#pods.get(uid);
    if (known !== undefined && sameInputs(known.inputs, inputs)) return known;
    const pod = convertPod(
      group.sandboxes.map((r) => ({ sandbox: r.item, status: r.status })),
      group.containers.map((r) => ({ container: r.item, status: r.status })),
      {
        nodeName: this.#options.nodeName,
        hostIPs: this.#options.hostIPs,
        runtimeName: this.#options.runtimeName,
        onReject: (reason, detail) => this.#reject(reason, `pod ${uid}: ${detail}`),
      },
    );
    // Built anew from what a relist read after an event told it first: the
    // same pod keeps its snapshot, so the cache passes it by.
    const same = pod !== undefined && known?.snapshot !== undefined &&
      jsonEqual(known.snapshot.pod, pod);
    return { inputs, snapshot: same ? known.snapshot : pod && snapshotOf(pod) };
  }

  #reject(reason: RejectReason, detail: string): void {
    this.#options.onReject?.(reason, detail);
  }
}

/** A record as an event leaves it: observed at the event's stamp, to be read by the next relist. */
function byEvent(stamp: number): Observed {
  return { seenFromNs: stamp, seenToNs: stamp, listed: false, byEvent: true, inspect: true };
}

/**
 * Whether an observation stamped `stamp` moves a record forward in the
 * runtime's time: surely newer than the record (after `seenToNs`), to a state
 * as far on and with news (`differs`); or maybe newer (after `seenFromNs`),
 * to a state further on.
 */
function forward(
  held: Observed,
  heldRank: number,
  nextRank: number,
  stamp: number,
  differs: () => boolean,
): boolean {
  if (stamp > held.seenToNs) return nextRank >= heldRank && differs();
  return stamp > held.seenFromNs && nextRank > heldRank;
}

/** Whether a relist listing an item so keeps the record it has without inspecting it. */
function settled(
  record: Observed & { readonly item: { readonly state: number; readonly createdAt: number } },
  state: number,
  createdAt: number,
): boolean {
  return record.listed && !record.inspect && record.item.state === state &&
    record.item.createdAt === createdAt;
}

function sameInputs(known: readonly object[], next: readonly object[]): boolean {
  return known.length === next.length && known.every((x, i) => x === next[i]);
}
