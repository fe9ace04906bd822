/**
 * The field-mask view of `v1.Pod`, built from the embedded descriptor: JSON
 * field names with inline Go structs flattened; `Time`, `MicroTime`,
 * `Quantity`, `IntOrString` and `FieldsV1` are scalars; maps are maps.
 *
 * @module
 */

import type { FieldSchema, MessageSchema, ObjectSchema } from "../fieldmask/schema.ts";
import { messagePlan } from "./_pod_plan.ts";
import { POD_TYPE_NAME } from "./load.ts";

function buildPodSchema(): ObjectSchema {
  const messages = new Map<string, MessageSchema>();
  const todo = [POD_TYPE_NAME];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (messages.has(name)) continue;
    const fields = new Map<string, FieldSchema>();
    for (const [key, field] of messagePlan(name).byKey) {
      if (field.map) {
        fields.set(key, { kind: "map", repeated: false });
      } else if (field.value.kind === "message") {
        const type = field.value.message!.name;
        fields.set(key, { kind: "message", repeated: field.repeated, type });
        todo.push(type);
      } else {
        fields.set(key, { kind: "scalar", repeated: field.repeated });
      }
    }
    messages.set(name, { fields });
  }
  return { root: POD_TYPE_NAME, messages };
}

/**
 * The schema of `k8s.io.api.core.v1.Pod` for field masks: every message
 * type reachable from Pod, keyed by full name, with its JSON fields.
 *
 * @example
 * ```ts
 * POD_SCHEMA.messages.get(POD_SCHEMA.root)?.fields.get("spec"); // { kind: "message", … }
 * ```
 */
export const POD_SCHEMA: ObjectSchema = buildPodSchema();
