/**
 * JSON value types: the shape of a Kubernetes object as its JSON encoding
 * defines it. Pods travel through the daemon in this form (the same form the
 * kubelet's `/pods`, a manifest file and `kubectl get -o json` use), so a
 * field that one source knows and another does not is carried, not dropped.
 *
 * @module
 */

/** Any JSON value. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonArray
  | JsonObject;

/** A JSON array. */
export type JsonArray = JsonValue[];

/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}

/**
 * Reports whether a value is a JSON object (not an array, not null).
 *
 * @param value Any value.
 * @returns `true` when `value` is a plain JSON object.
 */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
