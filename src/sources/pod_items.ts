/**
 * Pods as Kubernetes' HTTP APIs send them (`v1.PodList` items, watch event
 * objects), checked and turned into the daemon's {@linkcode PodObject}: the
 * same rules for the kubelet's `/pods` and the API server.
 *
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

/** Structural equality of two JSON values (key order ignored). */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    for (const k of keys) if (!(k in b) || !jsonEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/** A pod item that can be served. */
export interface ValidPodItem {
  readonly ok: true;
  readonly uid: string;
  /** The item without `kind` and `apiVersion` (a `v1.Pod` message has no place for them). */
  readonly pod: PodObject;
  /** `namespace/name`, for messages. */
  readonly where: string;
}

/** A pod item that cannot: no UID, name or namespace. */
export interface InvalidPodItem {
  readonly ok: false;
  /** A stable key of the problem (one warning per bad item, not per read). */
  readonly key: string;
  readonly reason: "invalid_pod";
  readonly detail: string;
}

function withoutTypeMeta(item: JsonObject): PodObject {
  const { kind: _kind, apiVersion: _apiVersion, ...pod } = item;
  return pod as PodObject;
}

/**
 * Checks one pod item.
 *
 * @example Usage
 * ```ts
 * import { checkPodItem } from "./pod_items.ts";
 * const r = checkPodItem({ kind: "Pod", metadata: { uid: "u", name: "a", namespace: "d" } }, 0);
 * console.assert(r.ok && r.pod.kind === undefined);
 * ```
 *
 * @param item The item as parsed from JSON.
 * @param index Its place in the list, named when the item has no name.
 * @returns The pod, or why it was refused.
 */
export function checkPodItem(item: unknown, index: number): ValidPodItem | InvalidPodItem {
  const metadata = isJsonObject(item) ? item.metadata : undefined;
  const where = isJsonObject(metadata) && typeof metadata.name === "string"
    ? `${String(metadata.namespace)}/${metadata.name}`
    : `#${index}`;
  if (
    !isJsonObject(item) || !isJsonObject(metadata) || typeof metadata.uid !== "string" ||
    metadata.uid === "" || typeof metadata.name !== "string" || metadata.name === "" ||
    typeof metadata.namespace !== "string" || metadata.namespace === ""
  ) {
    return {
      ok: false,
      key: `invalid:${where}`,
      reason: "invalid_pod",
      detail: `pod ${where} has no UID, name or namespace`,
    };
  }
  const pod = item.kind === undefined && item.apiVersion === undefined
    ? item as PodObject
    : withoutTypeMeta(item);
  return { ok: true, uid: metadata.uid, pod, where };
}
