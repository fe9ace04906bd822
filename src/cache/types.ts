/**
 * What the cache holds and publishes. Shared by the cache, the watch hub and
 * the request handlers; free of gRPC and protobuf.
 *
 * @module
 */

import type { PodObject, PodUid } from "../model/pod.ts";
import type { PodResources } from "../model/pod_resources.ts";

/** One pod as stored: its content, its content version and its wire bytes. */
export interface CachedPod {
  readonly uid: PodUid;
  readonly pod: Readonly<PodObject>;
  /**
   * The cache's resourceVersion at which this content was stored. Changes
   * only when the pod's content (its encoded bytes) changes.
   */
  readonly version: number;
  /** The pod's deterministic protobuf encoding, made once per version. */
  readonly bytes: Uint8Array;
  /**
   * What the kubelet's podresources API says the pod holds (devices, CPUs,
   * memory), kept beside the pod and never in `pod` or `bytes`. A change of
   * it alone makes a new `CachedPod` with the same `pod`, `bytes` and
   * `version` (see {@linkcode isResourcesOnlyChange}).
   */
  readonly resources?: PodResources | undefined;
}

/** Live watch event types (INITIAL_SYNC_COMPLETE belongs to the wire only). */
export type PodEventType = "ADDED" | "MODIFIED" | "DELETED";

/** One change of one pod. */
export interface PodEvent {
  readonly type: PodEventType;
  /** The pod after the change; for DELETED, its last state with `deletionTimestamp` set. */
  readonly pod: CachedPod;
  /** The pod before the change (MODIFIED and DELETED). */
  readonly prev?: CachedPod;
  /** The cache resourceVersion that this change produced; strictly increasing. */
  readonly seq: number;
}

/** The read side of the cache: all that request handlers may see. */
export interface PodStore {
  /** @returns The pod with this UID, if cached. */
  get(uid: PodUid): CachedPod | undefined;
  /** @returns Every cached pod, sorted by UID. */
  list(): readonly CachedPod[];
  /** Bumped by every change; the `seq` of the newest event. */
  readonly resourceVersion: number;
}

/**
 * Whether a MODIFIED event changed only the pod's resources (its bytes are
 * the very same): watchers that did not ask for resources never see one.
 *
 * @param event A cache event (possibly coalesced).
 * @returns `true` for a resources-only change.
 */
export function isResourcesOnlyChange(event: PodEvent): boolean {
  return event.type === "MODIFIED" && event.prev !== undefined &&
    event.prev.bytes === event.pod.bytes;
}

/** Turns a pod into its deterministic protobuf bytes (injected: the cache knows no protobuf). */
export type PodEncoder = (pod: Readonly<PodObject>) => Uint8Array;
