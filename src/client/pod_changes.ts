/**
 * What changed between two versions of a pod, named as a person reads it:
 * `status.phase`, `status.containerStatuses[web].restartCount`,
 * `status.conditions[Ready]`. Lists of objects are matched by `name` (or
 * `type`, `ip`) rather than by position, so a reordered list is no change.
 *
 * @module
 */

import { isJsonObject } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

const KEYS = ["name", "type", "ip", "containerPort"] as const;
/** Segments kept of a path: deeper details add noise, not meaning. */
const MAX_DEPTH = 3;

function keyOf(items: readonly unknown[]): string | undefined {
  return KEYS.find((k) =>
    items.every((i) => isJsonObject(i) && typeof i[k] !== "object" && k in i)
  );
}

function diff(a: unknown, b: unknown, path: string[], out: string[][]): void {
  if (a === b) return;
  if (path.length >= MAX_DEPTH) {
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path);
    return;
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      diff(a[k], b[k], [...path, k], out);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const key = keyOf([...a, ...b]);
    if (key !== undefined && path.length > 0) {
      const index = (items: unknown[]) =>
        new Map(items.map((i) => [String((i as Record<string, unknown>)[key]), i]));
      const ia = index(a);
      const ib = index(b);
      const last = path.length - 1;
      for (const k of new Set([...ia.keys(), ...ib.keys()])) {
        const at = [...path.slice(0, last), `${path[last]}[${k}]`];
        const x = ia.get(k);
        const y = ib.get(k);
        if (x === undefined || y === undefined) out.push(at);
        else diff(x, y, at, out);
      }
      return;
    }
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path);
}

/**
 * The paths that differ between two versions of a pod.
 *
 * @example Usage
 * ```ts
 * import { changedPaths } from "./pod_changes.ts";
 * const a = { metadata: { uid: "u", name: "p", namespace: "d" }, status: { phase: "Pending" } };
 * changedPaths(a, { ...a, status: { phase: "Running" } }); // ["status.phase"]
 * ```
 *
 * @param before The older version.
 * @param after The newer version.
 * @returns Dotted paths (at most three segments deep), in document order.
 */
export function changedPaths(before: PodObject, after: PodObject): string[] {
  const out: string[][] = [];
  diff(before, after, [], out);
  return [...new Set(out.map((p) => p.join(".")))];
}

/**
 * The CHANGED cell: the paths, shortened to fit a table.
 *
 * @param paths From {@linkcode changedPaths}.
 * @param max How many to name before "+N".
 * @returns e.g. `status.phase,status.conditions[Ready] +2`.
 */
export function changeSummary(paths: readonly string[], max = 3): string {
  if (paths.length === 0) return "";
  const shown = paths.slice(0, max).join(",");
  return paths.length > max ? `${shown} +${paths.length - max}` : shown;
}
