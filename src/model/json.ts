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

/**
 * A field read as an object, for code that reads a pod's JSON leniently.
 *
 * @param value The field's value.
 * @returns It, or `{}` when it is absent or not an object.
 */
export function objectOf(value: JsonValue | undefined): JsonObject {
  return isJsonObject(value) ? value : {};
}

/**
 * A list field read as objects, skipping items that are not.
 *
 * @param value The field's value.
 * @returns Its objects, or `[]` when it is absent or not an array.
 */
export function objectsOf(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

/**
 * A field read as a string.
 *
 * @param value The field's value.
 * @returns It, or `""` when it is absent or not a string.
 */
export function stringOf(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

/**
 * Orders strings by their UTF-8 bytes, as Go sorts map keys when it marshals.
 * UTF-16 order differs only for characters above U+FFFF against U+E000–U+FFFF.
 *
 * @example Usage
 * ```ts
 * import { compareUtf8 } from "./json.ts";
 * ["b", "a"].sort(compareUtf8); // ["a", "b"]
 * ```
 *
 * @param a A key.
 * @param b A key.
 * @returns Negative, zero or positive.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      const xs = x >= 0xd800 && x <= 0xdfff;
      const ys = y >= 0xd800 && y <= 0xdfff;
      if (xs !== ys) return xs ? 1 : -1;
      return x - y;
    }
  }
  return a.length - b.length;
}

/**
 * Serializes a JSON value with object keys sorted, so equal values always
 * give the same text, in the order Go's `encoding/json` writes map keys
 * (`FieldsV1` carried as raw JSON bytes, a static manifest's identity).
 *
 * @example Usage
 * ```ts
 * import { canonicalJson } from "./json.ts";
 * canonicalJson({ b: 1, a: [true] }); // '{"a":[true],"b":1}'
 * ```
 *
 * @param value A JSON value.
 * @returns The canonical JSON text.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort(compareUtf8)) {
      if (record[key] === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    }
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
