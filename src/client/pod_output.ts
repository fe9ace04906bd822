/**
 * The `-o` formats of `list` and `get`, as kubectl prints them: a `v1` `List`
 * (or one `Pod`) with `kind` and `apiVersion` as JSON (4-space indent) or
 * YAML, `pod/NAME` lines, JSONPath templates, and the table; plus the sort
 * order (namespace, then name; or `--sort-by`).
 *
 * @module
 */

import { stringify as toYaml } from "yaml";
import type { PodObject } from "../model/pod.ts";
import { UsageError } from "./cli_flags.ts";
import { JsonPath, JsonPathError } from "./jsonpath.ts";
import { alignColumns, type PodColumn, podRow } from "./pod_table.ts";

/** A parsed `-o` value. */
export type OutputFormat =
  | { readonly kind: "table" | "wide" | "name" | "json" | "yaml" }
  | { readonly kind: "jsonpath"; readonly template: JsonPath };

/**
 * Parses `-o`.
 *
 * @param value The flag's value (default `table`).
 * @param allowed The formats the subcommand takes.
 * @returns The format.
 * @throws {UsageError} For a format the subcommand does not take or a bad template.
 */
export function parseOutputFormat(value: string, allowed: readonly string[]): OutputFormat {
  const jsonpath = /^jsonpath=(.*)$/s.exec(value);
  if (jsonpath !== null && allowed.includes("jsonpath=TEMPLATE")) {
    try {
      return { kind: "jsonpath", template: new JsonPath(jsonpath[1]!) };
    } catch (err) {
      if (err instanceof JsonPathError) throw new UsageError(`flag -o: ${err.message}`);
      throw err;
    }
  }
  if (allowed.includes(value) && value !== "jsonpath=TEMPLATE") {
    return { kind: value as "table" | "wide" | "name" | "json" | "yaml" };
  }
  throw new UsageError(`unknown output format "${value}" for -o: use ${allowed.join(", ")}`);
}

/**
 * A pod as kubectl prints it: `apiVersion` and `kind` first.
 *
 * @param pod The pod.
 * @returns A new object.
 */
export function podWithKind(pod: PodObject): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Pod", ...pod };
}

/**
 * A `v1` `List` of pods, as `kubectl get pods -o json` prints it, its
 * `resourceVersion` the daemon's resume token (as on the HTTP API).
 *
 * @param pods The pods.
 * @param resourceVersion The resume token; empty from a kubelet's socket.
 * @returns The list object.
 */
export function podList(pods: readonly PodObject[], resourceVersion = ""): Record<string, unknown> {
  return {
    apiVersion: "v1",
    items: pods.map(podWithKind),
    kind: "List",
    metadata: { resourceVersion },
  };
}

/**
 * A pod with the daemon's resume token as its `resourceVersion`, as the
 * HTTP API gives it; unchanged without a token (a kubelet's socket).
 *
 * @param pod The pod.
 * @param resumeToken The token.
 * @returns The pod, or a copy with the token.
 */
export function withResourceVersion(pod: PodObject, resumeToken: string): PodObject {
  if (resumeToken === "") return pod;
  return { ...pod, metadata: { ...pod.metadata, resourceVersion: resumeToken } };
}

/**
 * Sorts pods by namespace and name, or by a `--sort-by` path (numbers as
 * numbers, missing values first, ties by namespace and name).
 *
 * @param pods The pods (not changed).
 * @param sortBy A JSONPath, or `undefined`.
 * @returns A sorted copy.
 * @throws {UsageError} For a bad `--sort-by` path.
 */
export function sortPods(pods: readonly PodObject[], sortBy?: string): PodObject[] {
  const byName = (a: PodObject, b: PodObject) =>
    cmp(a.metadata.namespace, b.metadata.namespace) || cmp(a.metadata.name, b.metadata.name);
  if (sortBy === undefined) return [...pods].sort(byName);
  let path: JsonPath;
  try {
    path = new JsonPath(sortBy);
  } catch (err) {
    if (err instanceof JsonPathError) throw new UsageError(`flag --sort-by: ${err.message}`);
    throw err;
  }
  const keyed = pods.map((pod) => ({ pod, key: path.first(pod) }));
  if (keyed.length > 0 && keyed.every((k) => k.key === undefined || k.key === null)) {
    // As kubectl: a path no pod has is a mistake, not an order.
    throw new UsageError(
      `flag --sort-by: couldn't find any field with path "${
        sortBy.includes("{") ? sortBy : `{${sortBy}}`
      }" in the list of objects`,
    );
  }
  return keyed.sort((a, b) => compareValues(a.key, b.key) || byName(a.pod, b.pod)).map((k) =>
    k.pod
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareValues(a: unknown, b: unknown): number {
  if (a === undefined || a === null) return b === undefined || b === null ? 0 : -1;
  if (b === undefined || b === null) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  const sa = typeof a === "object" ? JSON.stringify(a) : String(a);
  const sb = typeof b === "object" ? JSON.stringify(b) : String(b);
  return cmp(sa, sb);
}

/** What {@linkcode renderPods} needs besides the pods. */
export interface RenderOptions {
  readonly format: OutputFormat;
  readonly columns: readonly PodColumn[];
  readonly now: number;
  readonly mask: readonly string[];
  readonly noHeaders: boolean;
  /** One pod (`get`): JSON/YAML print a `Pod`, not a `List`. */
  readonly single: boolean;
  /** The List's `resourceVersion`: the daemon's resume token, if it sent one. */
  readonly resumeToken?: string;
}

/**
 * A document as `-o json` (kubectl's four-space indent) or `-o yaml` print it.
 *
 * @param doc The document.
 * @param format `json` or `yaml`.
 * @returns The text, no trailing newline.
 */
export function renderDocument(doc: unknown, format: "json" | "yaml"): string {
  return format === "json" ? JSON.stringify(doc, null, 4) : toYaml(doc).trimEnd();
}

/**
 * Renders pods in the chosen format.
 *
 * @param pods The pods, in order.
 * @param options Format, columns, clock, mask, headers.
 * @returns The text (no trailing newline), empty for an empty table.
 */
export function renderPods(pods: readonly PodObject[], options: RenderOptions): string {
  const { format } = options;
  const doc = options.single && pods.length === 1
    ? podWithKind(pods[0]!)
    : podList(pods, options.resumeToken);
  switch (format.kind) {
    case "json":
    case "yaml":
      return renderDocument(doc, format.kind);
    case "name":
      return pods.map((p) => `pod/${p.metadata.name}`).join("\n");
    case "jsonpath":
      return format.template.execute(doc);
    default: {
      const rows = pods.map((p) => podRow(p, options.columns, options.now, options.mask));
      const header = options.columns.map((c) => c.header);
      return alignColumns(options.noHeaders ? rows : [header, ...rows]).join("\n");
    }
  }
}
