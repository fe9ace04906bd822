/**
 * What a pod holds that the `v1.Pod` protobuf schema cannot carry: unknown
 * fields, values of the wrong type, invalid times and quantities. The
 * encoder leaves such values out; this lists them.
 *
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import { quantityText } from "./_k8s_values.ts";
import { type MessagePlan, messagePlan, type ValueKind } from "./_pod_plan.ts";
import { SCALAR_CODECS, SKIP } from "./_value_codecs.ts";
import { POD_TYPE_NAME } from "./load.ts";

/** One value of a pod the schema cannot carry. */
export interface Issue {
  readonly path: string;
  /** Set when the value is an invalid quantity. */
  readonly quantity?: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function fieldPath(base: string, key: string): string {
  if (!IDENT.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === "" ? key : `${base}.${key}`;
}

function checkValue(
  kind: ValueKind,
  plan: MessagePlan | undefined,
  v: JsonValue,
  path: string,
  issues: Issue[],
): void {
  if (kind === "message") {
    if (isJsonObject(v)) collectIssues(plan!, v, path, issues);
    else issues.push({ path });
    return;
  }
  if (kind === "quantity") {
    if (quantityText(v) === undefined) issues.push({ path, quantity: String(v) });
    return;
  }
  if (SCALAR_CODECS[kind].prepare(v) === SKIP) issues.push({ path });
}

function collectIssues(plan: MessagePlan, obj: JsonObject, path: string, issues: Issue[]): void {
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v === undefined || v === null) continue;
    const p = fieldPath(path, key);
    const field = plan.byKey.get(key);
    if (field === undefined) {
      // TypeMeta of a pod is implied by the message type.
      const typeMeta = path === "" && plan.name === POD_TYPE_NAME &&
        ((key === "apiVersion" && v === "v1") || (key === "kind" && v === "Pod"));
      if (!typeMeta) issues.push({ path: p });
      continue;
    }
    const { kind, message } = field.value;
    if (field.map) {
      if (!isJsonObject(v)) {
        issues.push({ path: p });
        continue;
      }
      for (const k of Object.keys(v)) {
        const entry = v[k];
        if (entry === undefined) continue;
        const ep = `${p}[${JSON.stringify(k)}]`;
        if (entry === null) issues.push({ path: ep });
        else checkValue(kind, message, entry, ep, issues);
      }
    } else if (field.repeated) {
      if (!Array.isArray(v)) {
        issues.push({ path: p });
        continue;
      }
      v.forEach((element, i) => {
        if (element === null) issues.push({ path: `${p}[${i}]` });
        else checkValue(kind, message, element, `${p}[${i}]`, issues);
      });
    } else {
      checkValue(kind, message, v, p, issues);
    }
  }
}

/**
 * Lists every value of a pod the schema cannot carry.
 *
 * @param pod The pod in its Kubernetes JSON shape.
 * @returns One issue per value, with its JSON path.
 */
export function findIssues(pod: Readonly<PodObject>): Issue[] {
  const issues: Issue[] = [];
  if (isJsonObject(pod)) collectIssues(messagePlan(POD_TYPE_NAME), pod, "", issues);
  return issues;
}

/**
 * Lists the JSON paths of values in a pod that the protobuf schema cannot
 * carry: unknown fields, values of the wrong type, invalid times, invalid
 * quantities. `encodePod()` leaves such values out (and throws for an
 * invalid quantity), so a source can log and count them instead of losing
 * them silently. `null` values mean "absent" in Kubernetes JSON and are not
 * reported; `apiVersion: "v1"` and `kind: "Pod"` are implied by the type.
 *
 * @example
 * ```ts
 * import { unrepresentablePaths } from "./pod_checker.ts";
 * unrepresentablePaths({ metadata: { uid: "u", name: "n", namespace: "d" }, spec: { bogus: 1 } });
 * // → ["spec.bogus"]
 * ```
 *
 * @param pod The pod in its Kubernetes JSON shape.
 * @returns Paths such as `spec.containers[0].resources.limits["cpu"]`; empty when all is carried.
 */
export function unrepresentablePaths(pod: Readonly<PodObject>): string[] {
  return findIssues(pod).map((issue) => issue.path);
}
