/**
 * What the kubelet's Pods API has told us, pod by pod: the bytes it sent
 * (to notice an unchanged pod without decoding it again) and the snapshot
 * the source reports, whether the kubelet answers now or not (then the view
 * is handed on as held). A fresh watch's initial list is collected aside
 * and then diffed against what is held, so a kubelet restart costs no event
 * for a pod that did not change.
 *
 * @module
 */

import { bytesEqual } from "../../bytes_equal.ts";
import { POD_PHASE, type PodObject, type PodSnapshot, type PodUid } from "../../model/pod.ts";
import { isJsonObject } from "../../model/json.ts";
import { jsonEqual } from "../kubelet/mod.ts";

/** A pod as the kubelet sent it: its bytes and their decoding. */
export interface ReceivedPod {
  readonly uid: PodUid;
  readonly bytes: Uint8Array;
  readonly pod: PodObject;
}

interface HeldPod {
  readonly bytes: Uint8Array;
  /** `false` when `live` kept an earlier status than `bytes` carry (see `keepKnownStatus`). */
  readonly exact: boolean;
  /** What the source reports. */
  readonly live: PodSnapshot;
}

/** How a committed initial list differed from what was held. */
export interface ListChanges {
  readonly added: number;
  readonly modified: number;
  readonly deleted: number;
}

const LATER_PHASES: ReadonlySet<unknown> = new Set([
  POD_PHASE.running,
  POD_PHASE.succeeded,
  POD_PHASE.failed,
]);

function phaseOf(pod: Readonly<PodObject>): unknown {
  return isJsonObject(pod.status) ? pod.status.phase : undefined;
}

/**
 * The kubelet reports a pod its status manager has no status for yet (right
 * after a restart) as Pending with Ready False. A pod never goes back to
 * Pending (DESIGN.md §6.4), so such a status says "not known yet", not news: the
 * pod keeps the status it had until the kubelet sends a real one.
 */
function keepKnownStatus(previous: Readonly<PodObject>, next: PodObject): PodObject {
  if (phaseOf(next) !== POD_PHASE.pending || !LATER_PHASES.has(phaseOf(previous))) return next;
  return previous.status === undefined ? next : { ...next, status: previous.status };
}

/**
 * The kubelet's pods as this daemon holds them.
 *
 * @example Usage
 * ```ts ignore
 * const view = new KubeletPodView();
 * view.beginList();
 * view.put({ uid: "u1", bytes, pod });
 * view.completeList(); // { added: 1, modified: 0, deleted: 0 }
 * view.snapshots();    // [{ uid: "u1", pod }]
 * ```
 */
export class KubeletPodView {
  #pods = new Map<PodUid, HeldPod>();
  /** The initial list of a watch in progress, not yet committed. */
  #pending: Map<PodUid, ReceivedPod> | undefined;
  #synced = false;
  #live = false;
  #snapshots: readonly PodSnapshot[] | undefined = [];

  /** `true` once a first full list has been committed. */
  get synced(): boolean {
    return this.#synced;
  }

  /** `true` while the held pods are the kubelet's current word (not held over an outage). */
  get live(): boolean {
    return this.#live;
  }

  /** Pods held. */
  get size(): number {
    return this.#pods.size;
  }

  /** `true` while a watch's initial list is being collected. */
  get listing(): boolean {
    return this.#pending !== undefined;
  }

  /** Starts collecting a new watch's initial list (a previous unfinished one is dropped). */
  beginList(): void {
    this.#pending = new Map();
  }

  /** Forgets an unfinished initial list (its watch failed before the end). */
  abandonList(): void {
    this.#pending = undefined;
  }

  /**
   * An ADDED or MODIFIED pod: collected while listing, else applied at once.
   *
   * @param received The pod.
   * @returns `true` when the view changed.
   */
  put(received: ReceivedPod): boolean {
    if (this.#pending !== undefined) {
      this.#pending.set(received.uid, received);
      return false;
    }
    return this.#apply(received);
  }

  /**
   * A DELETED pod (only its name, namespace and UID need be known).
   *
   * @param uid The pod's UID.
   * @returns `true` when the view changed.
   */
  delete(uid: PodUid): boolean {
    if (this.#pending !== undefined) {
      this.#pending.delete(uid);
      return false;
    }
    if (!this.#pods.delete(uid)) return false;
    this.#snapshots = undefined;
    return true;
  }

  /**
   * Ends an initial list (INITIAL_SYNC_COMPLETE): it becomes the view, and
   * what was held but not listed is gone. Pods whose bytes did not change
   * keep their snapshot objects, so nothing downstream sees them change.
   *
   * @returns What differed from the held view.
   * @throws {TypeError} When no list was begun.
   */
  completeList(): ListChanges {
    const pending = this.#pending;
    if (pending === undefined) throw new TypeError("Cannot complete an initial list never begun");
    this.#pending = undefined;
    let added = 0;
    let modified = 0;
    let deleted = 0;
    for (const uid of this.#pods.keys()) {
      if (pending.has(uid)) continue;
      this.#pods.delete(uid);
      deleted++;
    }
    for (const received of pending.values()) {
      const had = this.#pods.has(received.uid);
      if (this.#apply(received)) {
        if (had) modified++;
        else added++;
      }
    }
    this.#synced = true;
    this.#live = true;
    if (added + modified + deleted > 0) this.#snapshots = undefined;
    return { added, modified, deleted };
  }

  /**
   * The kubelet stopped answering: the pods stay, held.
   *
   * @returns `true` when the view was live.
   */
  hold(): boolean {
    if (!this.#live) return false;
    this.#live = false;
    return true;
  }

  /** @returns The view: the same array (and snapshot objects) until something changes. */
  snapshots(): readonly PodSnapshot[] {
    if (this.#snapshots !== undefined) return this.#snapshots;
    const out = [...this.#pods.values()].map((held) => held.live);
    this.#snapshots = out;
    return out;
  }

  /** Stores one pod; `false` when it is what is held already. */
  #apply(received: ReceivedPod): boolean {
    const previous = this.#pods.get(received.uid);
    if (previous !== undefined && bytesEqual(previous.bytes, received.bytes)) return false;
    let pod = received.pod;
    if (previous !== undefined) {
      pod = keepKnownStatus(previous.live.pod, pod);
      // Only a kept status can make different bytes the same pod: compare then.
      if ((pod !== received.pod || !previous.exact) && jsonEqual(pod, previous.live.pod)) {
        this.#pods.set(received.uid, {
          ...previous,
          bytes: received.bytes,
          exact: pod === received.pod,
        });
        return false;
      }
    }
    const exact = pod === received.pod;
    this.#pods.set(received.uid, {
      bytes: received.bytes,
      exact,
      live: { uid: received.uid, pod },
    });
    this.#snapshots = undefined;
    return true;
  }
}
