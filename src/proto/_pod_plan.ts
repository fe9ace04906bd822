/**
 * The Kubernetes JSON view of the protobuf schema: per message type, its
 * fields in field-number order with their JSON names, the Go structs that
 * JSON inlines, and the types whose JSON form is a scalar. Shared by the
 * codec and the field-mask schema. Private to `src/proto/`.
 *
 * @module
 */

import { lookupMessageType } from "./load.ts";
import type { FieldInfo } from "./schema.ts";

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";

/** Message types whose Kubernetes JSON form is not an object of their fields. */
export const SPECIAL_TYPES: ReadonlyMap<string, SpecialKind> = new Map<string, SpecialKind>([
  [`${META}.Time`, "time"],
  [`${META}.MicroTime`, "microTime"],
  [`${META}.FieldsV1`, "fieldsV1"],
  ["k8s.io.apimachinery.pkg.api.resource.Quantity", "quantity"],
  ["k8s.io.apimachinery.pkg.util.intstr.IntOrString", "intOrString"],
]);

/**
 * Embedded Go structs whose fields JSON puts at the parent level (Go tag
 * `json:""` / `json:",inline"` on an anonymous field), as `Type.field`.
 * Taken from the Go types of k8s.io/api core/v1 reachable from Pod.
 */
export const INLINE_FIELDS: ReadonlySet<string> = new Set([
  "k8s.io.api.core.v1.Volume.volumeSource",
  "k8s.io.api.core.v1.Probe.handler",
  "k8s.io.api.core.v1.EphemeralContainer.ephemeralContainerCommon",
  "k8s.io.api.core.v1.ConfigMapVolumeSource.localObjectReference",
  "k8s.io.api.core.v1.ConfigMapProjection.localObjectReference",
  "k8s.io.api.core.v1.ConfigMapKeySelector.localObjectReference",
  "k8s.io.api.core.v1.ConfigMapEnvSource.localObjectReference",
  "k8s.io.api.core.v1.SecretProjection.localObjectReference",
  "k8s.io.api.core.v1.SecretKeySelector.localObjectReference",
  "k8s.io.api.core.v1.SecretEnvSource.localObjectReference",
]);

/** A special message type's JSON form. */
export type SpecialKind = "time" | "microTime" | "fieldsV1" | "quantity" | "intOrString";

/** A protobuf scalar type the schema uses. */
export type ScalarKind = "string" | "bool" | "int32" | "int64" | "bytes";

/** How one value (a field's, a repeated element's or a map value) is carried. */
export type ValueKind = ScalarKind | SpecialKind | "message";

/** The value side of a field. */
export interface ValuePlan {
  readonly kind: ValueKind;
  /** The message plan when `kind` is `"message"`. */
  readonly message?: MessagePlan;
}

/** One protobuf field of a message type as JSON sees it. */
export interface FieldPlan {
  /** The JSON (and protobuf) field name. */
  readonly key: string;
  readonly id: number;
  readonly repeated: boolean;
  /** The Go struct is embedded: its fields sit in the parent's JSON object. */
  readonly inline: boolean;
  /** A map (JSON object), with string keys. */
  readonly map: boolean;
  /** The element value (the map value for maps). */
  readonly value: ValuePlan;
}

/** A message type as JSON sees it. */
export interface MessagePlan {
  /** Full type name without a leading dot. */
  readonly name: string;
  /** Protobuf fields in field-number order (inline fields included as such). */
  readonly fields: readonly FieldPlan[];
  /** Fields by number. */
  readonly byId: ReadonlyMap<number, FieldPlan>;
  /**
   * Fields by JSON key with inline structs flattened: the JSON object's keys.
   * Inline fields themselves are not keys.
   */
  readonly byKey: ReadonlyMap<string, FieldPlan>;
}

const SCALARS: ReadonlySet<string> = new Set(["string", "bool", "int32", "int64", "bytes"]);

const plans = new Map<string, MessagePlan>();

/**
 * Returns the JSON plan of a message type, built once per type.
 *
 * @param name Full type name without a leading dot.
 * @returns The plan.
 * @throws {TypeError} When the type uses a protobuf feature the plan does not support.
 */
export function messagePlan(name: string): MessagePlan {
  const known = plans.get(name);
  if (known !== undefined) return known;
  const type = lookupMessageType(name);
  const fields: FieldPlan[] = [];
  const byId = new Map<number, FieldPlan>();
  const byKey = new Map<string, FieldPlan>();
  const plan: MessagePlan = { name, fields, byId, byKey };
  // Registered before the fields so recursive types terminate.
  plans.set(name, plan);
  for (const field of type.fields) {
    const fieldPlan = planField(name, field);
    fields.push(fieldPlan);
    byId.set(fieldPlan.id, fieldPlan);
  }
  for (const field of fields) {
    if (field.inline && field.value.message !== undefined) {
      for (const [key, inner] of field.value.message.byKey) byKey.set(key, inner);
    }
  }
  for (const field of fields) {
    if (!field.inline) byKey.set(field.key, field);
  }
  return plan;
}

function planField(owner: string, field: FieldInfo): FieldPlan {
  const where = `${owner}.${field.name}`;
  if (field.map && field.keyType !== "string") {
    throw new TypeError(`Cannot plan map field "${where}": only string keys are supported`);
  }
  const value = planValue(where, field);
  const inline = INLINE_FIELDS.has(where);
  if (inline && (value.kind !== "message" || field.repeated || field.map)) {
    throw new TypeError(`Cannot inline field "${where}": it is not a singular message`);
  }
  return {
    key: field.name,
    id: field.id,
    repeated: field.repeated,
    inline,
    map: field.map,
    value,
  };
}

function planValue(where: string, field: FieldInfo): ValuePlan {
  const resolved = field.value;
  if (resolved.kind === "scalar") {
    if (!SCALARS.has(resolved.type)) {
      throw new TypeError(`Cannot plan field "${where}": type "${resolved.type}" is not supported`);
    }
    return { kind: resolved.type as ScalarKind };
  }
  if (resolved.kind === "enum") {
    throw new TypeError(`Cannot plan field "${where}": enums are not supported`);
  }
  const special = SPECIAL_TYPES.get(resolved.fullName);
  if (special !== undefined) return { kind: special };
  return { kind: "message", message: messagePlan(resolved.fullName) };
}
