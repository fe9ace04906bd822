/**
 * Every metric the daemon exports, declared in this one file: name, help,
 * labels and buckets. Components receive the {@linkcode Metrics} object;
 * none creates metrics of its own.
 *
 * The `kubelet_pod_*` names and labels are the kubelet's Pods API metrics,
 * kept identical so dashboards and alerts written for the kubelet work here.
 *
 * @module
 */

import process from "node:process";
import type { Registry } from "./exposition.ts";
import { Counter, Gauge, Histogram, type LabelValues } from "./instruments.ts";
import { parseMaxOpenFiles, parseProcStatus, type ProcReader } from "./proc_self.ts";

/**
 * `server_api_version`: `v1alpha1` for `v1alpha1.Pods`, `v1` for the package-less `Pods`,
 * `podsapi_v1` for `podsapi.v1.PodQuery`.
 */
export type ServerApiVersion = "v1alpha1" | "v1" | "podsapi_v1";

/** Where a call came in: a gRPC service, or `http` for the Kubernetes-compatible HTTP API. */
export type Surface = ServerApiVersion | "http";

/** Labels of the kubelet request counters. */
export type RequestLabel = "server_api_version" | "status_code";

/** The daemon's metrics. */
export interface Metrics {
  /** All Pods API requests, by API version and gRPC status code. */
  readonly requests: Counter<RequestLabel>;
  readonly requestsList: Counter<RequestLabel>;
  readonly requestsGet: Counter<RequestLabel>;
  readonly requestsWatch: Counter<RequestLabel>;
  /** How long List and Get calls took to answer, by API version and method. */
  readonly requestDuration: Histogram<"server_api_version" | "method">;
  /** Watch events lost because a watcher was dropped for falling behind. */
  readonly watchEventsDropped: Counter<never>;
  /** Watch events merged into a newer event of the same pod in a watcher's queue. */
  readonly watchEventsCoalesced: Counter<never>;
  /** Watchers dropped for falling behind. */
  readonly watchersDropped: Counter<"server_api_version">;
  /** Open watch streams. */
  readonly watchers: Gauge<"server_api_version">;
  /** Calls rejected by the ListPods/GetPod token bucket. */
  readonly rateLimited: Counter<"method">;
  /** Calls the serving core refused, by surface and reason. */
  readonly refused: Counter<"surface" | "reason">;
  readonly httpRequests: Counter<"verb" | "code">;
  /** Pod events produced by the cache, by type. */
  readonly podEvents: Counter<"type">;
  /** Pods in the cache. */
  readonly cachePods: Gauge<never>;
  /** Containers (all kinds) of the pods in the cache. */
  readonly cacheContainers: Gauge<never>;
  /** Pods served, by `status.phase` (`Unknown` for none). */
  readonly cachePodsByPhase: Gauge<"phase">;
  /** Duration of one relist of a source. */
  readonly relistDuration: Histogram<"source">;
  /** Failed relists, by source and reason. */
  readonly relistErrors: Counter<"source" | "reason">;
  /** Time of a source's last successful relist, Unix seconds. */
  readonly relistLastSuccess: Gauge<"source">;
  /** Change wake-ups that found their source already due for a relist (one read covers them). */
  readonly relistWakeupsCoalesced: Counter<"source">;
  /** 1 once a source has completed its first full read. */
  readonly sourceSynced: Gauge<"source">;
  /** Pods a source contributed at its last successful read. */
  readonly sourcePods: Gauge<"source">;
  /** Items a source skipped as invalid (bad manifest, absurd runtime data), by reason. */
  readonly sourceItemsRejected: Counter<"source" | "reason">;
  /** Values in pods a source sent that the `v1.Pod` protobuf schema cannot carry (left out). */
  readonly sourceFieldsUnrepresentable: Counter<"source">;
  /** 1 when the container runtime answered its last call. */
  readonly runtimeReachable: Gauge<never>;
  /** The runtime's container events, by what became of each (`applied`, `covered` by the last relist, or woke a `relist`). */
  readonly runtimeEvents: Counter<"outcome">;
  /** Init processes of containers started between relists read at once (`taken`), named none (`none`) or not read (`failed`). */
  readonly runtimeProcessReads: Counter<"outcome">;
  /** Process lookups (PID, cgroup, mount namespace), by outcome. */
  readonly processLookups: Counter<"outcome">;
  /** Containers' mount namespaces the kernel would not show the process index (no CAP_SYS_PTRACE). */
  readonly processNamespacesUnreadable: Counter<never>;
  /** Pod changes the cache refused because they broke a watch invariant. */
  readonly invariantCorrections: Counter<"kind">;
  /** API socket file found missing (and re-created), replaced by something else, or taken by another server. */
  readonly socketProblems: Counter<"problem">;
  /** Resident memory, read at scrape time (works under the binary's scoped permissions). */
  readonly residentMemory: Gauge<never>;
  /** V8 heap in use, read at scrape time. */
  readonly heapUsed: Gauge<never>;
  /** Open client connections on the API socket. */
  readonly connections: Gauge<never>;
  /** Client connections accepted on the API socket. */
  readonly connectionsAccepted: Counter<never>;
  /**
   * Connections and streams the transport ended for cause, by kind:
   * `protocol` (a peer broke HTTP/2: GOAWAY), `stream` (RST_STREAM),
   * `internal` (our code threw: that connection closed), `refused` (too many
   * connections), `handler` (a handler threw: INTERNAL).
   */
  readonly transportErrors: Counter<"kind" | "code">;
  /**
   * Connections a listener (`socket`, `http_api`, `metrics`) closed as soon
   * as it accepted them: `limit` (its connection cap), `shutting_down`.
   */
  readonly connectionsRefused: Counter<"listener" | "reason">;
  /** Accepts that failed (`EMFILE`, `ENFILE`, `ENOMEM`...); the listener waits and accepts again. */
  readonly acceptErrors: Counter<"listener" | "code">;
  /**
   * Connections of a TCP listener closed because a deadline passed:
   * `tls_handshake`, `read_header`, `idle`, `write`.
   */
  readonly connectionsTimedOut: Counter<"listener" | "deadline">;
  /** API server watches ended and opened again, by why they ended. */
  readonly apiserverWatchRestarts: Counter<"reason">;
  /** Full lists of the node's pods from the API server, by why. */
  readonly apiserverRelists: Counter<"reason">;
  /** Watch events from the API server, by type. */
  readonly apiserverWatchEvents: Counter<"type">;
  /** Unix time of the last list or watch event from the API server. */
  readonly apiserverLastEvent: Gauge<never>;
  /** Failed requests to the API server, by cause. */
  readonly apiserverErrors: Counter<"cause">;
  /** Calls made to the kubelet's podresources API, by call. */
  readonly podResourcesPolls: Counter<"call">;
  /** Failed podresources calls, by call and reason (`rate_limited`, `unavailable`...). */
  readonly podResourcesErrors: Counter<"call" | "reason">;
  /** 1 while the kubelet's podresources API answers. */
  readonly podResourcesAvailable: Gauge<never>;
  /** Pods of the last podresources answer by how they joined (`matched`, `no_pod`, `held_back`). */
  readonly podResourcesPods: Gauge<"join">;
  /** Devices (and exclusive CPUs, as `cpu`) by resource and state (`allocated`, `free`). */
  readonly devices: Gauge<"resource" | "state">;
  /** 1 while the kubelet's Pods API watch is open and past its initial list. */
  readonly kubeletPodsApiConnected: Gauge<never>;
  /** New `WatchPods` streams opened after one that had synced ended, by why it ended. */
  readonly kubeletPodsApiReconnects: Counter<"reason">;
  /** `WatchPodsEvent`s received from the kubelet's Pods API, by event type. */
  readonly kubeletPodsApiEvents: Counter<"type">;
  /** 1 while the daemon serves `v1alpha1.Pods` on the kubelet's path (`--kubelet-compat-socket`). */
  readonly compatSocketServing: Gauge<never>;
  /** Times another server (a kubelet) took the compatibility socket's path and the daemon gave it up. */
  readonly compatSocketYielded: Counter<never>;
}

/** The listeners of the daemon, as the connection metrics name them. */
export const LISTENERS = ["socket", "http_api", "metrics"] as const;

/** A listener of the daemon, as the connection metrics name it. */
export type ListenerName = typeof LISTENERS[number];

/**
 * `server_api_version` values, in the order of {@linkcode ServerApiVersion}.
 */
export const SERVER_API_VERSIONS = ["v1alpha1", "v1", "podsapi_v1"] as const;

/** Surfaces, in the order of {@linkcode Surface}. */
export const SURFACES = [...SERVER_API_VERSIONS, "http"] as const;

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

/**
 * The label values of every counter whose values are a closed set known
 * before the first event, so each starts at 0 (as the kubelet's and
 * go-grpc-prometheus' do) and `increase()` sees its first event. Counters
 * not here take values only known at run time: a configured source's name
 * (`source`), an errno (`acceptErrors`), an HTTP status (`httpRequests`),
 * a reason a source derives from the error it met.
 */
export const SEEDED_LABEL_VALUES = {
  requests: { server_api_version: SERVER_API_VERSIONS, status_code: GRPC_CODE_NAMES },
  watchersDropped: { server_api_version: SURFACES },
  rateLimited: { method: ["list", "get"] },
  refused: {
    surface: SURFACES,
    reason: ["rate_limited", "not_synced", "shutting_down", "too_many_watchers"],
  },
  podEvents: { type: ["ADDED", "MODIFIED", "DELETED"] },
  runtimeEvents: { outcome: ["applied", "covered", "relist"] },
  runtimeProcessReads: { outcome: ["taken", "none", "failed"] },
  processLookups: {
    outcome: ["found", "not_found", "invalid", "unavailable", "exhausted"],
  },
  invariantCorrections: {
    kind: ["phase_empty", "phase_regression", "phase_terminal", "deletion_timestamp"],
  },
  socketProblems: { problem: ["recreated", "rebind_failed", "replaced", "taken"] },
  transportErrors: [
    { kind: ["protocol", "stream"], code: H2_ERROR_NAMES },
    { kind: ["refused", "handler", "internal"], code: [""] },
  ],
  connectionsRefused: { listener: LISTENERS, reason: ["limit", "shutting_down"] },
  connectionsTimedOut: {
    listener: ["http_api", "metrics"],
    deadline: ["tls_handshake", "read_header", "idle", "write"],
  },
  apiserverWatchRestarts: { reason: ["timeout", "stalled", "broken", "error", "gone"] },
  apiserverRelists: { reason: ["initial", "gone"] },
  apiserverWatchEvents: { type: ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"] },
  apiserverErrors: {
    cause: [
      "http_401",
      "http_403",
      "http_404",
      "http_410",
      "http_429",
      "http_4xx",
      "http_5xx",
      "http_other",
      "tls",
      "dns",
      "connect",
      "timeout",
      "invalid_json",
      "too_large",
      "credentials",
    ],
  },
  podResourcesPolls: { call: ["list", "get_allocatable"] },
  kubeletPodsApiReconnects: {
    reason: [
      "closed",
      "failed_precondition",
      "resource_exhausted",
      "unavailable",
      "unimplemented",
      "error",
    ],
  },
  kubeletPodsApiEvents: { type: ["added", "modified", "deleted"] },
} as const satisfies Record<string, LabelSpace | readonly LabelSpace[]>;

/** Each label's values; a counter's children are their cross product. */
type LabelSpace = Readonly<Record<string, readonly string[]>>;

/** Every combination of the label values of `spaces`. */
function combinations(spaces: LabelSpace | readonly LabelSpace[]): Record<string, string>[] {
  const list: readonly LabelSpace[] = Array.isArray(spaces) ? spaces : [spaces as LabelSpace];
  return list.flatMap((space) =>
    Object.entries(space).reduce<Record<string, string>[]>(
      (acc, [label, values]) =>
        acc.flatMap((partial) => values.map((value) => ({ ...partial, [label]: value }))),
      [{}],
    )
  );
}

/** Creates the given children at 0, so `increase()` sees their first event. */
function seeded<L extends string>(
  counter: Counter<L>,
  spaces: LabelSpace | readonly LabelSpace[],
): Counter<L> {
  for (const labels of combinations(spaces)) counter.labels(labels as LabelValues<L>);
  return counter;
}

const RELIST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * Creates and registers every metric.
 *
 * @param registry The registry to expose (one per daemon; tests make their own).
 * @returns The metrics.
 */
export function createMetrics(registry: Registry): Metrics {
  const registers = [registry];
  const requestLabels: RequestLabel[] = ["server_api_version", "status_code"];
  return {
    requests: seeded(
      new Counter({
        name: "kubelet_pod_requests_total",
        help: "Cumulative number of requests to the Pods API.",
        labelNames: requestLabels,
        registers,
      }),
      SEEDED_LABEL_VALUES.requests,
    ),
    requestsList: seeded(
      new Counter({
        name: "kubelet_pod_requests_list_total",
        help: "Number of requests to the ListPods endpoint.",
        labelNames: requestLabels,
        registers,
      }),
      SEEDED_LABEL_VALUES.requests,
    ),
    requestsGet: seeded(
      new Counter({
        name: "kubelet_pod_requests_get_total",
        help: "Number of requests to the GetPod endpoint.",
        labelNames: requestLabels,
        registers,
      }),
      SEEDED_LABEL_VALUES.requests,
    ),
    requestsWatch: seeded(
      new Counter({
        name: "kubelet_pod_requests_watch_total",
        help: "Number of requests to the WatchPods endpoint, counted when the stream ends.",
        labelNames: requestLabels,
        registers,
      }),
      SEEDED_LABEL_VALUES.requests,
    ),
    requestDuration: new Histogram({
      name: "pods_api_request_duration_seconds",
      help: "Time to answer a List or Get call (watches are long-lived and not timed).",
      labelNames: ["server_api_version", "method"],
      buckets: RELIST_BUCKETS,
      registers,
    }),
    watchEventsDropped: new Counter({
      name: "kubelet_pod_watch_events_dropped_total",
      help: "Watch events dropped because a client did not consume its stream fast enough.",
      registers,
    }),
    watchEventsCoalesced: new Counter({
      name: "pods_api_watch_events_coalesced_total",
      help: "Queued watch events replaced by a newer event of the same pod.",
      registers,
    }),
    watchersDropped: seeded(
      new Counter({
        name: "pods_api_watchers_dropped_total",
        help: "Watch streams ended with RESOURCE_EXHAUSTED because their queue overflowed.",
        labelNames: ["server_api_version"],
        registers,
      }),
      SEEDED_LABEL_VALUES.watchersDropped,
    ),
    watchers: new Gauge({
      name: "pods_api_watchers",
      help: "Open watches, by surface (http for the HTTP API); --max-watchers bounds their sum.",
      labelNames: ["server_api_version"],
      registers,
    }),
    rateLimited: seeded(
      new Counter({
        name: "pods_api_rate_limited_total",
        help: "List and Get calls (gRPC and HTTP) rejected by a token bucket, by method.",
        labelNames: ["method"],
        registers,
      }),
      SEEDED_LABEL_VALUES.rateLimited,
    ),
    refused: seeded(
      new Counter({
        name: "pods_api_requests_refused_total",
        help:
          "Calls refused before being served, by surface (v1alpha1, v1, podsapi_v1, http) and reason (rate_limited, not_synced, shutting_down, too_many_watchers).",
        labelNames: ["surface", "reason"],
        registers,
      }),
      SEEDED_LABEL_VALUES.refused,
    ),
    httpRequests: new Counter({
      name: "pods_api_http_requests_total",
      help: "Requests to the Kubernetes-compatible HTTP API, by verb and HTTP status code.",
      labelNames: ["verb", "code"],
      registers,
    }),
    podEvents: seeded(
      new Counter({
        name: "pods_api_pod_events_total",
        help: "Pod changes published to watchers, by event type.",
        labelNames: ["type"],
        registers,
      }),
      SEEDED_LABEL_VALUES.podEvents,
    ),
    cachePods: new Gauge({
      name: "pods_api_cache_pods",
      help: "Pods held in the cache.",
      registers,
    }),
    cacheContainers: new Gauge({
      name: "pods_api_cache_containers",
      help: "Containers (init, regular and ephemeral) of the pods in the cache.",
      registers,
    }),
    cachePodsByPhase: new Gauge({
      name: "pods_api_cache_pods_by_phase",
      help: "Pods currently served, by status.phase (Unknown when a pod has none).",
      labelNames: ["phase"],
      registers,
    }),
    relistDuration: new Histogram({
      name: "pods_api_relist_duration_seconds",
      help: "Duration of one full read of a pod source.",
      labelNames: ["source"],
      buckets: RELIST_BUCKETS,
      registers,
    }),
    relistErrors: new Counter({
      name: "pods_api_relist_errors_total",
      help: "Failed reads of a pod source, by reason.",
      labelNames: ["source", "reason"],
      registers,
    }),
    relistLastSuccess: new Gauge({
      name: "pods_api_relist_last_success_timestamp_seconds",
      help: "Unix time of the last successful read of a pod source.",
      labelNames: ["source"],
      registers,
    }),
    relistWakeupsCoalesced: new Counter({
      name: "pods_api_relist_wakeups_coalesced_total",
      help:
        "Change events that found their pod source already due for a relist (during a read or --relist-min-interval): one read covers them.",
      labelNames: ["source"],
      registers,
    }),
    sourceSynced: new Gauge({
      name: "pods_api_source_synced",
      help: "1 once a pod source has completed its first full read.",
      labelNames: ["source"],
      registers,
    }),
    sourcePods: new Gauge({
      name: "pods_api_source_pods",
      help: "Pods a source reported at its last successful read.",
      labelNames: ["source"],
      registers,
    }),
    sourceItemsRejected: new Counter({
      name: "pods_api_source_items_rejected_total",
      help: "Items a pod source skipped as invalid, by reason.",
      labelNames: ["source", "reason"],
      registers,
    }),
    sourceFieldsUnrepresentable: new Counter({
      name: "pods_api_source_fields_unrepresentable_total",
      help:
        "Values in pods a source sent that the v1.Pod protobuf schema cannot carry (unknown fields, wrong types), left out of the served bytes, by source.",
      labelNames: ["source"],
      registers,
    }),
    runtimeReachable: new Gauge({
      name: "pods_api_runtime_reachable",
      help: "1 when the container runtime answered the last relist.",
      registers,
    }),
    runtimeEvents: seeded(
      new Counter({
        name: "pods_api_runtime_events_total",
        help:
          "Container events from the runtime's GetContainerEvents stream, by outcome: applied (its statuses taken into the view at once), covered (overtaken: older than the last relist, which read its change, or than a removal already taken in), relist (woke a relist: without statuses, as containerd's sandbox DELETED, or naming something made while the last relist read).",
        labelNames: ["outcome"],
        registers,
      }),
      SEEDED_LABEL_VALUES.runtimeEvents,
    ),
    runtimeProcessReads: seeded(
      new Counter({
        name: "pods_api_runtime_process_reads_total",
        help:
          "Verbose ContainerStatus reads of a container a runtime event showed running with no init process known yet, by outcome: taken (process lookups find it at once), none (no live PID, or the container left meanwhile), failed (the call failed; the next relist reads it).",
        labelNames: ["outcome"],
        registers,
      }),
      SEEDED_LABEL_VALUES.runtimeProcessReads,
    ),
    processLookups: seeded(
      new Counter({
        name: "pods_api_process_lookups_total",
        help:
          "PodQuery Get by host PID, cgroup ID, cgroup path or mount namespace, by outcome: found, not_found (not in a pod's container), invalid (bad input), unavailable (/proc or the cgroup tree not readable), exhausted (the daemon had no file descriptor left to read /proc).",
        labelNames: ["outcome"],
        registers,
      }),
      SEEDED_LABEL_VALUES.processLookups,
    ),
    processNamespacesUnreadable: new Counter({
      name: "pods_api_process_namespaces_unreadable_total",
      help:
        "Containers whose init process' mount namespace the kernel would not show (/proc/PID/ns/mnt of another user needs CAP_SYS_PTRACE): not found by --mntns, found by everything else.",
      registers,
    }),
    socketProblems: seeded(
      new Counter({
        name: "pods_api_socket_problems_total",
        help:
          "API socket file found removed (recreated, rebind_failed), replaced by something that is not a socket (replaced), or by another live server's socket (taken).",
        labelNames: ["problem"],
        registers,
      }),
      SEEDED_LABEL_VALUES.socketProblems,
    ),
    residentMemory: new Gauge({
      name: "pods_api_resident_memory_bytes",
      help: "Resident memory of the daemon, in bytes.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().rss);
      },
    }),
    heapUsed: new Gauge({
      name: "pods_api_heap_used_bytes",
      help: "V8 heap in use by the daemon, in bytes.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().heapUsed);
      },
    }),
    connections: new Gauge({
      name: "pods_api_connections",
      help: "Open client connections on the API socket.",
      registers,
    }),
    connectionsAccepted: new Counter({
      name: "pods_api_connections_accepted_total",
      help: "Client connections accepted on the API socket.",
      registers,
    }),
    transportErrors: seeded(
      new Counter({
        name: "pods_api_transport_errors_total",
        help:
          "Connections and streams ended for cause: protocol (GOAWAY), stream (RST_STREAM), internal (our code threw), refused (connection limit), handler (INTERNAL), with the HTTP/2 error code.",
        labelNames: ["kind", "code"],
        registers,
      }),
      SEEDED_LABEL_VALUES.transportErrors,
    ),
    connectionsRefused: seeded(
      new Counter({
        name: "pods_api_connections_refused_total",
        help:
          "Connections a listener (socket, http_api, metrics) closed as soon as it accepted them: limit (its connection cap), shutting_down.",
        labelNames: ["listener", "reason"],
        registers,
      }),
      SEEDED_LABEL_VALUES.connectionsRefused,
    ),
    acceptErrors: new Counter({
      name: "pods_api_accept_errors_total",
      help:
        "Accepts that failed, by listener and error code (EMFILE, ENFILE, ENOMEM...); the listener waits (5 ms doubling to 1 s) and accepts again.",
      labelNames: ["listener", "code"],
      registers,
    }),
    connectionsTimedOut: seeded(
      new Counter({
        name: "pods_api_connections_timed_out_total",
        help:
          "Connections of a TCP listener (http_api, metrics) closed because a deadline passed: tls_handshake, read_header, idle, write.",
        labelNames: ["listener", "deadline"],
        registers,
      }),
      SEEDED_LABEL_VALUES.connectionsTimedOut,
    ),
    apiserverWatchRestarts: seeded(
      new Counter({
        name: "pods_api_apiserver_watch_restarts_total",
        help:
          "API server watches opened again (from the last resourceVersion, no relist) after they ended: timeout (the server's timeoutSeconds), stalled (no end within timeoutSeconds plus grace), broken (the connection broke), error (a failed request), gone (410: a relist follows).",
        labelNames: ["reason"],
        registers,
      }),
      SEEDED_LABEL_VALUES.apiserverWatchRestarts,
    ),
    apiserverRelists: seeded(
      new Counter({
        name: "pods_api_apiserver_relists_total",
        help:
          "Full lists of the node's pods from the API server: initial (start), gone (after 410 Gone).",
        labelNames: ["reason"],
        registers,
      }),
      SEEDED_LABEL_VALUES.apiserverRelists,
    ),
    apiserverWatchEvents: seeded(
      new Counter({
        name: "pods_api_apiserver_watch_events_total",
        help:
          "Watch events received from the API server, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).",
        labelNames: ["type"],
        registers,
      }),
      SEEDED_LABEL_VALUES.apiserverWatchEvents,
    ),
    apiserverLastEvent: new Gauge({
      name: "pods_api_apiserver_last_event_timestamp_seconds",
      help:
        "Unix time of the last list or watch event (bookmarks included) from the API server; its age is time() minus this.",
      registers,
    }),
    apiserverErrors: seeded(
      new Counter({
        name: "pods_api_apiserver_errors_total",
        help:
          "Failed requests to the API server, by cause: http_401, http_403, http_429, http_5xx, http_4xx, tls, dns, connect, timeout, invalid_json, too_large, credentials.",
        labelNames: ["cause"],
        registers,
      }),
      SEEDED_LABEL_VALUES.apiserverErrors,
    ),
    podResourcesPolls: seeded(
      new Counter({
        name: "pods_api_podresources_polls_total",
        help:
          "Calls to the kubelet's podresources API (list at the relist period, get_allocatable every minute).",
        labelNames: ["call"],
        registers,
      }),
      SEEDED_LABEL_VALUES.podResourcesPolls,
    ),
    podResourcesErrors: new Counter({
      name: "pods_api_podresources_errors_total",
      help:
        "Failed podresources calls, by call and reason (rate_limited: the kubelet answered RESOURCE_EXHAUSTED and the daemon backed off).",
      labelNames: ["call", "reason"],
      registers,
    }),
    podResourcesAvailable: new Gauge({
      name: "pods_api_podresources_available",
      help: "1 while the kubelet's podresources API answers; 0 when it is absent or failing.",
      registers,
    }),
    podResourcesPods: new Gauge({
      name: "pods_api_podresources_pods",
      help:
        "Pods of the last podresources answer holding something, by join: matched (to a pod UID), no_pod (no such pod known yet), held_back (the name's known pod is not the one the kubelet runs).",
      labelNames: ["join"],
      registers,
    }),
    devices: new Gauge({
      name: "pods_api_devices",
      help:
        "Devices by resource (device plugin resource, DRA driver, or cpu for exclusive CPUs) and state: allocated (held by a container) or free (allocatable, held by none).",
      labelNames: ["resource", "state"],
      registers,
    }),
    kubeletPodsApiConnected: new Gauge({
      name: "pods_api_kubelet_pods_api_connected",
      help: "1 while the watch on the kubelet's Pods API is open and past its initial list.",
      registers,
    }),
    kubeletPodsApiReconnects: seeded(
      new Counter({
        name: "pods_api_kubelet_pods_api_reconnects_total",
        help:
          "New WatchPods streams on the kubelet's Pods API after a synced one ended, by why it ended (closed, resource_exhausted, unavailable, failed_precondition, error).",
        labelNames: ["reason"],
        registers,
      }),
      SEEDED_LABEL_VALUES.kubeletPodsApiReconnects,
    ),
    kubeletPodsApiEvents: seeded(
      new Counter({
        name: "pods_api_kubelet_pods_api_events_total",
        help: "WatchPods events received from the kubelet's Pods API, by event type.",
        labelNames: ["type"],
        registers,
      }),
      SEEDED_LABEL_VALUES.kubeletPodsApiEvents,
    ),
    compatSocketServing: new Gauge({
      name: "pods_api_compat_socket_serving",
      help: "1 while the daemon serves v1alpha1.Pods on the kubelet's socket path.",
      registers,
    }),
    compatSocketYielded: new Counter({
      name: "pods_api_compat_socket_yielded_total",
      help:
        "Times another server (a kubelet) took the compatibility socket's path and the daemon gave it up.",
      registers,
    }),
    invariantCorrections: seeded(
      new Counter({
        name: "pods_api_invariant_corrections_total",
        help:
          "Pod updates adjusted to keep watch invariants (phase regressions, lost deletionTimestamp).",
        labelNames: ["kind"],
        registers,
      }),
      SEEDED_LABEL_VALUES.invariantCorrections,
    ),
  };
}

/**
 * Registers the process metrics under Prometheus' standard names, each read
 * at scrape time: CPU time and start time always, resident memory always
 * (from `/proc/self/status`, else from the runtime), and the figures only
 * `/proc/self` has (virtual memory, heap, open and maximum descriptors) only
 * when `proc` can read it. A figure that cannot be read is not exported.
 *
 * @param registry The registry to expose.
 * @param proc A reader of `/proc/self` that works (see `openProcSelf`), or `undefined`.
 */
export function createProcessMetrics(registry: Registry, proc: ProcReader | undefined): void {
  const registers = [registry];
  const cpu = (name: string, help: string, seconds: (u: NodeJS.CpuUsage) => number) => {
    let counted = 0;
    new Counter({
      name,
      help,
      registers,
      collect() {
        const now = seconds(process.cpuUsage());
        if (now > counted) this.inc(now - counted);
        counted = Math.max(counted, now);
      },
    });
  };
  cpu("process_cpu_user_seconds_total", "User CPU time spent, in seconds.", (u) => u.user / 1e6);
  cpu(
    "process_cpu_system_seconds_total",
    "System CPU time spent, in seconds.",
    (u) => u.system / 1e6,
  );
  cpu(
    "process_cpu_seconds_total",
    "User and system CPU time spent, in seconds.",
    (u) => (u.user + u.system) / 1e6,
  );
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds.",
    registers,
  }).set(Math.floor(performance.timeOrigin / 1000));
  const memory = () =>
    proc === undefined ? undefined : parseProcStatus(proc.readText("/proc/self/status"));
  const gauge = (name: string, help: string, read: () => number | undefined) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        try {
          const value = read();
          if (value !== undefined) this.set(value);
        } catch {
          // Keep the last value: a scrape must not fail for one figure.
        }
      },
    });
  gauge(
    "process_resident_memory_bytes",
    "Resident memory size, in bytes.",
    () => memory()?.residentBytes ?? Deno.memoryUsage().rss,
  );
  if (proc === undefined) return;
  gauge(
    "process_virtual_memory_bytes",
    "Virtual memory size, in bytes.",
    () => memory()?.virtualBytes,
  );
  gauge(
    "process_heap_bytes",
    "Process heap (data segment) size, in bytes.",
    () => memory()?.heapBytes,
  );
  gauge("process_open_fds", "Open file descriptors.", () => proc.countEntries("/proc/self/fd"));
  gauge(
    "process_max_fds",
    "Maximum number of open file descriptors.",
    () => parseMaxOpenFiles(proc.readText("/proc/self/limits")),
  );
}
