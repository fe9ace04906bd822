/**
 * Field mask projection: a copy of a pod holding only the masked fields,
 * walking the compiled tree of a {@linkcode FieldMask}. No strings are parsed
 * per pod, and the work is bounded by the mask and the selected data.
 *
 * @module
 */

import { isJsonObject, type JsonArray, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import type { FieldMask, MaskNode } from "./parse.ts";

/**
 * Projects a pod through a mask. The result is a new object holding only the
 * masked fields (plus `metadata.uid`, `metadata.name`, `metadata.namespace`);
 * fields absent in the pod stay absent, and a message the pod has but whose
 * selected fields it lacks comes out as `{}`. A value selected whole is shared
 * with the input, not copied: treat both as read-only, as pod snapshots are.
 * A mask for the whole pod returns the input itself.
 *
 * @example
 * ```ts ignore
 * const mask = parseFieldMaskText("status.phase", POD_SCHEMA);
 * project(mask, pod); // { metadata: { name, namespace, uid }, status: { phase } }
 * ```
 *
 * @param mask A compiled mask.
 * @param pod The pod (not modified).
 * @returns The projected pod, or `pod` itself when `mask.isAll`.
 */
export function project(mask: FieldMask, pod: Readonly<PodObject>): PodObject {
  const root = mask.root;
  if (root === null) return pod as PodObject;
  return projectObject(root, pod) as PodObject;
}

function projectObject(node: MaskNode, source: Readonly<JsonObject>): JsonObject {
  const out: JsonObject = {};
  for (const field of node.fields) {
    const value = source[field.name];
    if (value === undefined) continue;
    const mask = field.mask;
    if (mask === null || value === null) {
      out[field.name] = value;
    } else if (field.repeated) {
      if (Array.isArray(value)) out[field.name] = projectArray(mask, value);
    } else if (isJsonObject(value)) {
      out[field.name] = projectObject(mask, value);
    }
    // A value of the wrong shape cannot hold the selected fields: dropped.
  }
  return out;
}

function projectArray(node: MaskNode, source: readonly JsonValue[]): JsonArray {
  const out: JsonArray = [];
  for (const item of source) {
    // Elements that are not objects carry no fields; kept so indices line up.
    out.push(isJsonObject(item) ? projectObject(node, item) : item);
  }
  return out;
}
