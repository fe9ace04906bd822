/**
 * The CRI source's state, in one place: the sandboxes and containers last
 * read, each with the runtime time it was observed at, the pods built from
 * them, and the view served. Two synchronous writers, nothing else:
 *
 * - {@linkcode CriState.applyList} replaces the whole state with what one
 *   relist read (its lists, and the statuses it inspected or had read before
 *   of items listed unchanged). After it, the view is the view a fresh state
 *   would build from the same answers: nothing an event said survives it.
 * - {@linkcode CriState.applyEvent} (its rules in `_event_intake.ts`) takes one runtime event that carries its
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
import { sameContainerStatus, sameSandboxStatus } from "./_event_items.ts";
import { takeEvent } from "./_event_intake.ts";
import type {
  ContainerRecord,
  EventOutcome,
  HeldRecords,
  ListWindow,
  Observed,
  SandboxRecord,
} from "./_records.ts";
import {
  type Container,
  CONTAINER_STATE,
  type ContainerEventResponse,
  type ContainerStatus,
  type PodSandbox,
  type PodSandboxStatus,
} from "./_types.ts";

export type { EventOutcome, ListWindow };

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

interface PodInputs {
  readonly sandboxes: SandboxRecord[];
  readonly containers: ContainerRecord[];
}

interface PodEntry {
  /** The items and statuses the snapshot was built from (identity compared). */
  readonly inputs: readonly object[];
  readonly snapshot: PodSnapshot | undefined;
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
  #held: HeldRecords = {
    window: undefined,
    sandboxes: new Map(),
    containers: new Map(),
    exitRecheck: new Set(),
    goneAt: new Map(),
  };
  #pods = new Map<string, PodEntry>();
  #view: readonly PodSnapshot[] = [];
  /** Keys of items rejected at the last relist, so each is counted once. */
  #rejected = new Set<string>();
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
    for (const [id, record] of this.#held.containers) {
      const process = this.#processes.get(id);
      if (process === undefined) continue;
      if ((record.status?.state ?? record.item.state) !== CONTAINER_STATE.running) continue;
      const podUid = this.#held.sandboxes.get(record.item.podSandboxId)?.uid ??
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
    const record = this.#held.containers.get(id);
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
    return this.#held.window;
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
    const record = this.#held.sandboxes.get(id);
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
    const record = this.#held.containers.get(id);
    return record !== undefined && settled(record, state, createdAt) &&
        !this.#held.exitRecheck.has(id)
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
      const record = this.#held.sandboxes.get(item.id);
      if (record === undefined && !isValidCriId(item.id)) continue;
      if (record === undefined || !settled(record, item.state, item.createdAt)) {
        sandboxIds.push(item.id);
      }
    }
    const containerIds: string[] = [];
    for (const item of containers) {
      const record = this.#held.containers.get(item.id);
      if (record === undefined && !isValidCriId(item.id)) continue;
      if (
        record === undefined || !settled(record, item.state, item.createdAt) ||
        this.#held.exitRecheck.has(item.id)
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
      const known = this.#held.sandboxes.get(id);
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
      const known = this.#held.containers.get(id);
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
      const pending = this.#held.exitRecheck.has(id);
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
    this.#held = { window, sandboxes, containers, exitRecheck, goneAt: new Map() };
    this.#processes = processes;
    this.#running = undefined;
    this.#pods = pods;
    this.#rejected = rejected;
    // The same array when every pod is: the cache downstream passes it by.
    if (!sameItems(view, this.#view)) this.#view = view;
  }

  /**
   * Takes one runtime event in (see `_event_intake.ts`). Its statuses are
   * the sandbox's and every one of its containers' as of its stamp; a record
   * only moves forward in the runtime's time, and what the last relist did
   * not list and might have missed is left to a relist.
   *
   * @param event The event.
   * @returns What became of it.
   */
  applyEvent(event: ContainerEventResponse): EventOutcome {
    this.#running = undefined;
    return takeEvent(this.#held, event, (uid) => this.#rebuildPod(uid));
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
    for (const record of this.#held.sandboxes.values()) {
      if (record.uid === uid) group.sandboxes.push(record);
    }
    if (group.sandboxes.length > 0) {
      for (const record of this.#held.containers.values()) {
        const owner = this.#held.sandboxes.get(record.item.podSandboxId)?.uid;
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
