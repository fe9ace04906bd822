/**
 * The API server's JSON documents the HTTP surface answers with: `Status`
 * errors, discovery (`/api`, `/apis`, `/api/v1`, `/version`), pods and pod
 * lists with their resourceVersion, and `Table` responses.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import { isJsonObject, type JsonObject, type JsonValue } from "../model/json.ts";
import { goArch } from "../version.ts";
import { POD_COLUMNS, printPod } from "./pod_printer.ts";
import { STATUS_LISTS } from "../status/mod.ts";

/** The `reason` of a `Status` for each HTTP code we send. */
export const STATUS_REASON = {
  400: "BadRequest",
  401: "Unauthorized",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  410: "Expired",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
} as const;

/** An HTTP code the surface answers errors with. */
export type StatusCodeHttp = keyof typeof STATUS_REASON;

/**
 * A `v1` `Status` failure, as the API server writes it.
 *
 * @param code HTTP code.
 * @param message Human-readable message.
 * @param details `name` and `kind` of the object concerned, or the seconds a
 *   refused client should wait (`retryAfterSeconds`), if any.
 * @returns The Status object.
 */
export function statusObject(
  code: StatusCodeHttp,
  message: string,
  details?: { name: string; kind: string } | { retryAfterSeconds: number },
): JsonObject {
  const status: JsonObject = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: STATUS_REASON[code],
  };
  if (details !== undefined) {
    status.details = "retryAfterSeconds" in details
      ? { retryAfterSeconds: details.retryAfterSeconds }
      : { name: details.name, kind: details.kind };
  }
  status.code = code;
  return status;
}

/** `/api`: the core group's versions. */
export function apiVersions(serverAddress: string): JsonObject {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

/** `/apis`: no groups beyond the core group. */
export const API_GROUP_LIST: JsonObject = Object.freeze({
  kind: "APIGroupList",
  apiVersion: "v1",
  groups: [],
});

/** `/api/v1`: pods, and the namespaces they live in, read only. */
export const CORE_V1_RESOURCES: JsonObject = Object.freeze({
  kind: "APIResourceList",
  groupVersion: "v1",
  resources: [{
    name: "pods",
    singularName: "pod",
    namespaced: true,
    kind: "Pod",
    verbs: ["get", "list", "watch"],
    shortNames: ["po"],
    categories: ["all"],
  }, {
    name: "namespaces",
    singularName: "namespace",
    namespaced: false,
    kind: "Namespace",
    verbs: ["get", "list"],
    shortNames: ["ns"],
  }],
});

/**
 * `/version`, shaped like the API server's.
 *
 * @param gitVersion This build's version.
 * @returns The version document.
 */
export function versionInfo(gitVersion: string): JsonObject {
  return {
    major: "1",
    minor: "36",
    gitVersion,
    // Go's names, as the API server says it: linux/amd64, not linux/x86_64.
    platform: `${Deno.build.os}/${goArch()}`,
  };
}

/**
 * Go writes a `ContainerStatus`'s `name`, `ready`, `restartCount`, `image`
 * and `imageID` even when empty (no `omitempty`), and clients rely on it
 * (python-kubernetes refuses a status without `imageID`): fill in what a
 * source left out.
 */
function withRequiredFields(status: JsonValue | undefined): JsonValue | undefined {
  if (!isJsonObject(status)) return status;
  let out: JsonObject | undefined;
  for (const list of STATUS_LISTS) {
    const statuses = status[list];
    if (!Array.isArray(statuses)) continue;
    const complete = statuses.every((cs) =>
      isJsonObject(cs) && typeof cs.imageID === "string" && typeof cs.image === "string" &&
      typeof cs.ready === "boolean" && typeof cs.restartCount === "number"
    );
    if (complete) continue;
    out ??= { ...status };
    out[list] = statuses.map((cs) =>
      isJsonObject(cs)
        ? { name: "", ready: false, restartCount: 0, image: "", imageID: "", ...cs }
        : cs
    );
  }
  return out ?? status;
}

/** Pod JSON rendered once per pod version (lists and watch events share it). */
const RENDERED = new WeakMap<CachedPod, string>();

/**
 * A pod as the API server writes it in a list's `items` (no `kind`,
 * `apiVersion`), with `metadata.resourceVersion` set to `resourceVersion`.
 *
 * @param pod The cached pod.
 * @param resourceVersion The token to stamp.
 * @param memo Whether `resourceVersion` is the pod's own (then the text is kept).
 * @returns The JSON text.
 */
export function podItemJson(pod: CachedPod, resourceVersion: string, memo: boolean): string {
  if (memo) {
    const hit = RENDERED.get(pod);
    if (hit !== undefined) return hit;
  }
  // `kind` and `apiVersion` belong to the envelope, never to a list item.
  const { metadata, kind: _kind, apiVersion: _apiVersion, ...rest } = pod.pod;
  const item: JsonObject = { metadata: { ...metadata, resourceVersion }, ...rest };
  if (rest.status !== undefined) item.status = withRequiredFields(rest.status)!;
  const text = JSON.stringify(item);
  if (memo) RENDERED.set(pod, text);
  return text;
}

/**
 * A whole `Pod` object: `{"kind":"Pod","apiVersion":"v1",...}`.
 *
 * @param item The item JSON from {@linkcode podItemJson}.
 * @returns The JSON text.
 */
export function podObjectJson(item: string): string {
  return `{"kind":"Pod","apiVersion":"v1",${item.slice(1)}`;
}

/** What a `Table` row carries as `object` (`includeObject`). */
export type IncludeObject = "None" | "Metadata" | "Object";

/**
 * A `meta.k8s.io/v1` `Table` of pods.
 *
 * @param rows Each pod and its resourceVersion token.
 * @param options List metadata, what to include per row, and the time for AGE.
 * @returns The Table JSON text.
 */
export function podTableJson(
  rows: readonly { pod: CachedPod; resourceVersion: string }[],
  options: { metadata: JsonObject; include: IncludeObject; now: number; columns: boolean },
): string {
  const out: JsonObject = {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: options.metadata,
  };
  if (options.columns) out.columnDefinitions = POD_COLUMNS.map((c) => ({ ...c }));
  const rendered = rows.map(({ pod, resourceVersion }) => {
    const printed = printPod(pod.pod, options.now);
    const row: JsonObject = { cells: [...printed.cells] };
    if (printed.conditions !== undefined) row.conditions = [...printed.conditions];
    if (options.include === "Metadata") {
      row.object = {
        kind: "PartialObjectMetadata",
        apiVersion: "meta.k8s.io/v1",
        metadata: { ...pod.pod.metadata, resourceVersion },
      };
    } else if (options.include === "Object") {
      row.object = JSON.parse(podObjectJson(podItemJson(pod, resourceVersion, false)));
    }
    return row;
  });
  out.rows = rendered;
  return JSON.stringify(out);
}
