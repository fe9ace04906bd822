/**
 * A watcher's pending events: insertion-ordered, at most one live entry per
 * pod UID, every operation O(1). A new event for a UID with a pending event
 * merges into it and the result moves to the tail, so the queue stays in
 * `seq` order and a slow watcher sees each pod's newest state.
 *
 * @module
 */

import type { PodEvent } from "../cache/types.ts";
import type { PodUid } from "../model/pod.ts";
import { bytesEqual } from "../bytes_equal.ts";
import { ChurnMap } from "../churn_map.ts";

interface Node {
  event: PodEvent;
  prev: Node | undefined;
  next: Node | undefined;
}

/**
 * Whether a MODIFIED still tells its watcher something: its pod differs from
 * `prev`, the state the watcher last saw.
 */
export type KeepModified = (event: PodEvent) => boolean;

/** The default {@linkcode KeepModified}: the pod's bytes changed. */
function bytesChanged(event: PodEvent): boolean {
  return event.prev === undefined || !bytesEqual(event.prev.bytes, event.pod.bytes);
}

/**
 * Merges a pending event with a newer one of the same pod.
 *
 * @returns The merged event, `null` when both cancel out, or `undefined`
 * when the newer one must be queued on its own.
 */
function merge(
  pending: PodEvent,
  event: PodEvent,
  keep: KeepModified,
): PodEvent | null | undefined {
  switch (pending.type) {
    case "ADDED":
      // The client has not seen the pod yet: it gets its newest state, or nothing.
      if (event.type === "DELETED") return null;
      return { type: "ADDED", pod: event.pod, seq: event.seq };
    case "MODIFIED": {
      // Keep the older `prev`: it is what the client last saw.
      if (event.type === "ADDED") return undefined;
      const merged: PodEvent = { type: event.type, pod: event.pod, seq: event.seq };
      if (pending.prev === undefined) return merged;
      const told: PodEvent = { ...merged, prev: pending.prev };
      // Changed, then changed back before the client was told: nothing to tell.
      return told.type === "MODIFIED" && !keep(told) ? null : told;
    }
    case "DELETED":
      // The same UID reappearing starts a new lifetime: both must be delivered.
      return undefined;
  }
}

/** A bounded-by-the-caller FIFO of pod events with per-UID coalescing. */
export class CoalescingQueue {
  #head: Node | undefined;
  #tail: Node | undefined;
  #size = 0;
  /**
   * The newest pending entry of each UID: a `ChurnMap`, as a watcher's
   * queue lives long and takes a UID in and out per event.
   */
  #byUid = new ChurnMap<PodUid, Node>();
  readonly #keep: KeepModified;

  /**
   * @param options `keep`: whether a merged MODIFIED still differs, for its
   *   watcher, from what the watcher last saw (a masked watcher compares its
   *   fields only). @default {the pod's bytes changed}. `resources`: a change of
   *   what the pod holds (podresources) counts as a change too.
   */
  constructor(options: { keep?: KeepModified; resources?: boolean } = {}) {
    const { keep, resources } = options;
    // A watcher of allocations (podresources) must also hear a change of what the pod holds.
    const changed: KeepModified = resources === true
      ? (event) => bytesChanged(event) || event.prev?.resources !== event.pod.resources
      : bytesChanged;
    this.#keep = keep === undefined ? changed : (event) => changed(event) && keep(event);
  }

  /** Events waiting. */
  get size(): number {
    return this.#size;
  }

  /**
   * Adds an event, merging it with a pending event of the same pod.
   *
   * @param event The newest event (its `seq` above every queued one).
   * @returns How many queued-or-new events the merge made disappear (0, 1 or 2).
   */
  push(event: PodEvent): number {
    const uid = event.pod.uid;
    const pending = this.#byUid.get(uid);
    if (pending !== undefined) {
      const merged = merge(pending.event, event, this.#keep);
      if (merged === null) {
        this.#unlink(pending);
        this.#byUid.delete(uid);
        return 2;
      }
      if (merged !== undefined) {
        this.#unlink(pending);
        pending.event = merged;
        this.#append(pending);
        return 1;
      }
    }
    const node: Node = { event, prev: undefined, next: undefined };
    this.#append(node);
    this.#byUid.set(uid, node);
    return 0;
  }

  /** @returns The oldest event, removed from the queue, or `undefined`. */
  shift(): PodEvent | undefined {
    const node = this.#head;
    if (node === undefined) return undefined;
    this.#unlink(node);
    const uid = node.event.pod.uid;
    if (this.#byUid.get(uid) === node) this.#byUid.delete(uid);
    return node.event;
  }

  /** Forgets every event. */
  clear(): void {
    this.#head = this.#tail = undefined;
    this.#size = 0;
    this.#byUid.clear();
  }

  #append(node: Node): void {
    node.prev = this.#tail;
    node.next = undefined;
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.#size++;
  }

  #unlink(node: Node): void {
    if (node.prev === undefined) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = node.next = undefined;
    this.#size--;
  }
}
