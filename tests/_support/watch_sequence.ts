/**
 * Checks a `v1alpha1.Pods/WatchPods` stream as it is served, event by event:
 * per UID `ADDED (MODIFIED)* DELETED` and nothing after (a pod whose cause
 * came back may start a new `ADDED`), every `MODIFIED` carrying new bytes,
 * every `DELETED` a `deletionTimestamp`, and no event ahead of its cause
 * (a pod ADDED before it was created, DELETED before it was removed).
 *
 * @module
 */

import type { PodObject } from "../../src/model/pod.ts";
import { decodePod } from "../../src/proto/mod.ts";

/** What the test did to each pod, counted when the action is issued (before it can be seen). */
export interface PodCauses {
  /** How many times the pod was brought into being (manifest written, sandbox run). */
  created(pod: PodObject): number;
  /** How many times it was taken away (manifest removed, sandbox removed). */
  removed(pod: PodObject): number;
  /** Pods whose content never changes: any MODIFIED of theirs is wrong. */
  immutable?(pod: PodObject): boolean;
}

interface PodRecord {
  live: boolean;
  adds: number;
  deletes: number;
  bytes: Uint8Array;
  pod: PodObject;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Follows one watch stream and records every broken rule. */
export class WatchSequenceChecker {
  /** Every rule broken, in stream order (empty when the stream is right). */
  readonly violations: string[] = [];
  /** Events received, by type. */
  readonly counts: Record<string, number> = {};
  /** The pod of every DELETED received, in order. */
  readonly deleted: PodObject[] = [];
  readonly #causes: PodCauses;
  readonly #pods = new Map<string, PodRecord>();
  #synced = false;

  /** @param causes What the test did, for the cause checks. */
  constructor(causes: PodCauses) {
    this.#causes = causes;
  }

  /** Distinct pod UIDs seen. */
  get uids(): number {
    return this.#pods.size;
  }

  /**
   * Takes the next event of the stream.
   *
   * @param type The event type as served.
   * @param bytes The event's pod bytes as served (empty for INITIAL_SYNC_COMPLETE).
   */
  observe(type: string, bytes: Uint8Array | undefined): void {
    this.counts[type] = (this.counts[type] ?? 0) + 1;
    const fail = (what: string): void => {
      this.violations.push(what);
    };
    if (type === "INITIAL_SYNC_COMPLETE") {
      if (this.#synced) fail("INITIAL_SYNC_COMPLETE twice");
      this.#synced = true;
      return;
    }
    if (bytes === undefined || bytes.length === 0) return fail(`${type} without a pod`);
    const pod = decodePod(bytes);
    const uid = pod.metadata.uid;
    const name = `${uid} (${pod.metadata.name})`;
    const record = this.#pods.get(uid);
    switch (type) {
      case "ADDED": {
        if (record?.live) return fail(`${name}: ADDED while live`);
        const adds = (record?.adds ?? 0) + 1;
        if (this.#causes.created(pod) < adds) {
          fail(`${name}: ADDED #${adds} before the pod was created ${adds} time(s)`);
        }
        this.#pods.set(uid, { live: true, adds, deletes: record?.deletes ?? 0, bytes, pod });
        return;
      }
      case "MODIFIED": {
        if (record === undefined || !record.live) {
          return fail(`${name}: MODIFIED ${record ? "after DELETED" : "before ADDED"}`);
        }
        if (sameBytes(record.bytes, bytes)) fail(`${name}: MODIFIED with unchanged bytes`);
        if (this.#causes.immutable?.(pod)) fail(`${name}: MODIFIED, its source never changed`);
        record.bytes = bytes;
        record.pod = pod;
        return;
      }
      case "DELETED": {
        if (record === undefined || !record.live) {
          return fail(`${name}: DELETED ${record ? "twice" : "before ADDED"}`);
        }
        if (typeof pod.metadata.deletionTimestamp !== "string") {
          fail(`${name}: DELETED without deletionTimestamp`);
        }
        const deletes = record.deletes + 1;
        if (this.#causes.removed(pod) < deletes) {
          fail(`${name}: DELETED #${deletes} before the pod was removed ${deletes} time(s)`);
        }
        record.live = false;
        record.deletes = deletes;
        this.deleted.push(pod);
        return;
      }
      default:
        fail(`${name}: unknown event type ${type}`);
    }
  }

  /** @returns The live pods as the stream tells them: UID to pod bytes. */
  live(): Map<string, Uint8Array> {
    const out = new Map<string, Uint8Array>();
    for (const [uid, record] of this.#pods) if (record.live) out.set(uid, record.bytes);
    return out;
  }
}

/**
 * Compares the stream's live pods with a list answer, byte for byte.
 *
 * @param live The stream's live pods.
 * @param listed The pods a ListPods returned, as bytes.
 * @returns What differs (empty when they agree).
 */
export function compareWithList(
  live: ReadonlyMap<string, Uint8Array>,
  listed: readonly Uint8Array[],
): string[] {
  const out: string[] = [];
  const byUid = new Map(listed.map((bytes) => [decodePod(bytes).metadata.uid, bytes] as const));
  for (const [uid, bytes] of byUid) {
    const seen = live.get(uid);
    if (seen === undefined) out.push(`${uid}: listed, not live in the stream`);
    else if (!sameBytes(seen, bytes)) {
      out.push(`${uid}: the stream's last bytes are not the list's`);
    }
  }
  for (const uid of live.keys()) {
    if (!byUid.has(uid)) out.push(`${uid}: live in the stream, not listed`);
  }
  return out;
}
