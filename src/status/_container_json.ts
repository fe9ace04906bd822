/**
 * Readers of `v1.ContainerStatus` JSON shared by the status rules: lenient,
 * as a source may send any shape.
 *
 * @module
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";

/** A string field, or `undefined`. */
export function str(value: JsonValue | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** Which of `running`, `terminated` or `waiting` a `v1.ContainerState` holds. */
export function stateKind(
  state: JsonValue | undefined,
): "running" | "terminated" | "waiting" | undefined {
  if (!isJsonObject(state)) return undefined;
  if (isJsonObject(state.running)) return "running";
  if (isJsonObject(state.terminated)) return "terminated";
  if (isJsonObject(state.waiting)) return "waiting";
  return undefined;
}

/** The exit code of a terminated state (0 when unset), else `undefined`. */
export function exitCode(state: JsonValue | undefined): number | undefined {
  if (!isJsonObject(state) || !isJsonObject(state.terminated)) return undefined;
  const code = state.terminated.exitCode;
  return typeof code === "number" ? code : 0;
}

/** Container statuses by name; the first of a repeated name wins. */
export function byName(statuses: readonly JsonObject[]): Map<string, JsonObject> {
  const map = new Map<string, JsonObject>();
  for (const s of statuses) {
    const name = str(s.name);
    if (name !== undefined && !map.has(name)) map.set(name, s);
  }
  return map;
}

/** Orders statuses (or specs) by `name`. */
export function compareNames(a: JsonObject, b: JsonObject): number {
  const x = str(a.name) ?? "";
  const y = str(b.name) ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}
