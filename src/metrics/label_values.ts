/**
 * The closed sets of label values several metrics share, and the seeding of
 * a counter's children from such sets.
 *
 * A counter whose label values are all known before its first event starts
 * every child at 0 (as the kubelet's and go-grpc-prometheus' counters do),
 * so `increase()` and `rate()` see that first event. A counter whose values
 * are only known at run time (a configured source's name, an errno, an HTTP
 * status, a reason derived from the error met) is not seeded.
 *
 * @module
 */

import type { Counter, LabelValues } from "./instruments.ts";

/** The listeners of the daemon, as the connection metrics name them. */
export const LISTENERS = ["socket", "http_api", "metrics"] as const;

/**
 * `server_api_version` values: `v1alpha1` for `v1alpha1.Pods`, `v1` for the
 * package-less `Pods`, `podsapi_v1` for `podsapi.v1.PodQuery`.
 */
export const SERVER_API_VERSIONS = ["v1alpha1", "v1", "podsapi_v1"] as const;

/** Where a call comes in: a gRPC service, or `http` for the Kubernetes-compatible HTTP API. */
export const SURFACES = [...SERVER_API_VERSIONS, "http"] as const;

/** Why the serving core refuses a call before serving it. */
export const REFUSAL_REASONS = [
  "rate_limited",
  "not_synced",
  "shutting_down",
  "too_many_watchers",
] as const;

/**
 * Go's names of the 17 gRPC status codes (`codes.Code.String()`), by code:
 * the `status_code` label of the kubelet request counters.
 */
export const GRPC_CODE_NAMES = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
] as const;

/** HTTP/2's error code names (RFC 9113 §7), by code: the `code` label of transport errors. */
export const H2_ERROR_NAMES = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
] as const;

/** The values of each label of a counter; its seeded children are their cross product. */
export type LabelSpace<L extends string> = Readonly<Record<L, readonly string[]>>;

/** Every combination of the label values of `spaces`. */
function combinations<L extends string>(
  spaces: readonly LabelSpace<L>[],
): LabelValues<L>[] {
  return spaces.flatMap((space) =>
    Object.entries<readonly string[]>(space).reduce<Record<string, string>[]>(
      (acc, [label, values]) =>
        acc.flatMap((partial) => values.map((value) => ({ ...partial, [label]: value }))),
      [{}],
    )
  ) as LabelValues<L>[];
}

/**
 * Creates a counter's children at 0 for every combination of the given values.
 *
 * @param counter The counter.
 * @param spaces One label space, or several whose children are all created
 *   (when some values of one label go only with some of another).
 * @returns The counter.
 */
export function seedCounter<L extends string>(
  counter: Counter<L>,
  spaces: LabelSpace<L> | readonly LabelSpace<L>[],
): Counter<L> {
  const list = Array.isArray(spaces) ? spaces : [spaces as LabelSpace<L>];
  for (const labels of combinations(list)) counter.labels(labels);
  return counter;
}
