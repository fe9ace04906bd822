/**
 * The identity-level diff of a source's full view against what the cache
 * holds: which pods are new, which arrived as a different object (and may
 * have changed), which are gone. Pure, and cheap: it never looks inside a
 * pod, so an unchanged pod the source hands back as the same object costs a
 * map lookup and a pointer comparison.
 *
 * @module
 */

import type { PodObject, PodSnapshot, PodUid } from "../model/pod.ts";

/** What the diff needs to know of a stored pod: the object the source last gave. */
export interface StoredInput {
  /** The source's object as last applied (before any correction). */
  readonly input: Readonly<PodObject>;
}

/** The result of {@linkcode diffPods}. */
export interface PodDiff {
  /** Snapshots of pods not stored yet, in view order. */
  readonly added: readonly PodSnapshot[];
  /** Snapshots whose object is not the stored one (content may or may not differ), in view order. */
  readonly replaced: readonly PodSnapshot[];
  /** UIDs stored but missing from the view, sorted. */
  readonly removed: readonly PodUid[];
  /** Snapshots that repeated a UID already in the view (the last one wins). */
  readonly duplicates: number;
}

/**
 * Compares a full view with the stored pods by UID and object identity.
 *
 * @example Usage
 * ```ts
 * import { diffPods } from "./diff.ts";
 * const pod = { metadata: { uid: "a", name: "a", namespace: "default" } };
 * const diff = diffPods(new Map(), [{ uid: "a", pod }]);
 * console.assert(diff.added.length === 1);
 * ```
 *
 * @param stored The cache's pods by UID.
 * @param view The source's full view; for a repeated UID the last snapshot counts.
 * @returns New, replaced and removed pods, plus the number of duplicates.
 */
export function diffPods(
  stored: ReadonlyMap<PodUid, StoredInput>,
  view: readonly PodSnapshot[],
): PodDiff {
  const latest = new Map<PodUid, PodSnapshot>();
  let duplicates = 0;
  for (const snapshot of view) {
    if (latest.has(snapshot.uid)) duplicates++;
    latest.set(snapshot.uid, snapshot);
  }
  const added: PodSnapshot[] = [];
  const replaced: PodSnapshot[] = [];
  for (const snapshot of latest.values()) {
    const entry = stored.get(snapshot.uid);
    if (entry === undefined) added.push(snapshot);
    else if (entry.input !== snapshot.pod) replaced.push(snapshot);
  }
  const removed: PodUid[] = [];
  if (latest.size - added.length !== stored.size) {
    for (const uid of stored.keys()) if (!latest.has(uid)) removed.push(uid);
    removed.sort(compareUids);
  }
  return { added, replaced, removed, duplicates };
}

/**
 * Orders UIDs by code unit, as Go orders strings by byte for ASCII UIDs.
 *
 * @param a A UID.
 * @param b Another UID.
 * @returns Negative, zero or positive, as `Array.prototype.sort` expects.
 */
export function compareUids(a: PodUid, b: PodUid): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
