/**
 * The pod as the daemon holds it: a Kubernetes `v1.Pod` in its JSON shape,
 * keyed by UID. Names get reused across pod lifetimes; UIDs do not.
 *
 * @module
 */

import { isJsonObject, type JsonObject } from "./json.ts";

/** A pod's `metadata.uid`: the key of every map in the daemon. */
export type PodUid = string;

/** Pod phases as `v1.PodPhase` spells them. */
export const POD_PHASE = {
  pending: "Pending",
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  unknown: "Unknown",
} as const;

/** One of {@linkcode POD_PHASE}. */
export type PodPhase = typeof POD_PHASE[keyof typeof POD_PHASE];

/** `metadata` of a pod: the fields the daemon itself reads, plus the rest. */
export interface PodMetadata extends JsonObject {
  uid: string;
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  deletionTimestamp?: string;
}

/**
 * A `v1.Pod` in its JSON shape (camelCase names, RFC 3339 times, quantities
 * as strings). `spec` and `status` are open objects: every field a source
 * sends is kept.
 */
export interface PodObject extends JsonObject {
  metadata: PodMetadata;
  spec?: JsonObject;
  status?: JsonObject;
}

/**
 * One pod as a source reports it. Immutable: a source that has not seen a
 * change should hand back the very same object, which lets the cache skip it
 * without looking inside.
 */
export interface PodSnapshot {
  readonly uid: PodUid;
  readonly pod: Readonly<PodObject>;
}

/**
 * Builds a snapshot from a pod object, taking the key from `metadata.uid`.
 *
 * @param pod A pod whose metadata carries its UID.
 * @returns The snapshot.
 * @throws {TypeError} When the pod has no UID.
 */
export function snapshotOf(pod: PodObject): PodSnapshot {
  const uid = pod.metadata.uid;
  if (typeof uid !== "string" || uid === "") {
    throw new TypeError(`Cannot key pod "${pod.metadata.name}": it has no UID`);
  }
  return { uid, pod };
}

/**
 * Reads `status.phase` of a pod.
 *
 * @param pod The pod.
 * @returns The phase, or `undefined` when the pod carries none.
 */
export function podPhase(pod: Readonly<PodObject>): string | undefined {
  const status = pod.status;
  if (!isJsonObject(status)) return undefined;
  return typeof status.phase === "string" ? status.phase : undefined;
}
