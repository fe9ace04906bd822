/**
 * Every metric the daemon exports, declared in this one file: name, help,
 * labels, buckets, and the label values counted from 0 before their first
 * event. Components receive the {@linkcode Metrics} object; none creates
 * metrics of its own. The label value sets several metrics share are in
 * `label_values.ts`; the instruments and their exposition in
 * `instruments.ts` and `exposition.ts`.
 *
 * The `kubelet_pod_*` names and labels are the kubelet's Pods API metrics,
 * kept identical so dashboards and alerts written for the kubelet work here.
 *
 * @module
 */

import process from "node:process";
import type { Registry } from "./exposition.ts";
import {
  Counter,
  Gauge,
  Histogram,
  type HistogramConfiguration,
  type MetricConfiguration,
} from "./instruments.ts";
import {
  GRPC_CODE_NAMES,
  H2_ERROR_NAMES,
  type LabelSpace,
  LISTENERS,
  REFUSAL_REASONS,
  seedCounter,
  SERVER_API_VERSIONS,
  SURFACES,
} from "./label_values.ts";
import { parseMaxOpenFiles, parseProcStatus, type ProcReader } from "./proc_self.ts";

/** The `server_api_version` label: which gRPC service a call came in on. */
export type ServerApiVersion = typeof SERVER_API_VERSIONS[number];

/** Where a call came in: a gRPC service, or `http` for the Kubernetes-compatible HTTP API. */
export type Surface = typeof SURFACES[number];

/** A listener of the daemon, as the connection metrics name it. */
export type ListenerName = typeof LISTENERS[number];

/** Labels of the kubelet request counters. */
export type RequestLabel = "server_api_version" | "status_code";

/**
 * The daemon's metrics: their type follows from the declarations below, so
 * each metric is written once.
 */
export type Metrics = ReturnType<typeof declareMetrics>;

/** What a counter is declared with: with `seeds`, the children over those values start at 0. */
interface CounterDeclaration<L extends string> extends MetricConfiguration<L, Counter<L>> {
  seeds?: LabelSpace<L> | readonly LabelSpace<L>[];
}

/** Seconds, from half a millisecond to 5 s: a List answer and a relist both fall in this range. */
const TIME_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * Creates and registers every metric.
 *
 * @param registry The registry to expose (one per daemon; tests make their own).
 * @returns The metrics.
 */
export function createMetrics(registry: Registry): Metrics {
  return declareMetrics(registry);
}

function declareMetrics(registry: Registry) {
  const registers = [registry];
  function counter<L extends string = never>(declared: CounterDeclaration<L>): Counter<L> {
    const { seeds, ...config } = declared;
    const made = new Counter({ ...config, registers });
    return seeds === undefined ? made : seedCounter(made, seeds);
  }
  function gauge<L extends string = never>(config: MetricConfiguration<L, Gauge<L>>): Gauge<L> {
    return new Gauge({ ...config, registers });
  }
  function histogram<L extends string = never>(config: HistogramConfiguration<L>): Histogram<L> {
    return new Histogram({ ...config, registers });
  }
  const requestLabels: RequestLabel[] = ["server_api_version", "status_code"];
  const requestSeeds = {
    "server_api_version": SERVER_API_VERSIONS,
    "status_code": GRPC_CODE_NAMES,
  };
  return {
    requests: counter({
      name: "kubelet_pod_requests_total",
      help: "Cumulative number of requests to the Pods API.",
      labelNames: requestLabels,
      seeds: requestSeeds,
    }),
    requestsList: counter({
      name: "kubelet_pod_requests_list_total",
      help: "Number of requests to the ListPods endpoint.",
      labelNames: requestLabels,
      seeds: requestSeeds,
    }),
    requestsGet: counter({
      name: "kubelet_pod_requests_get_total",
      help: "Number of requests to the GetPod endpoint.",
      labelNames: requestLabels,
      seeds: requestSeeds,
    }),
    requestsWatch: counter({
      name: "kubelet_pod_requests_watch_total",
      help: "Number of requests to the WatchPods endpoint, counted when the stream ends.",
      labelNames: requestLabels,
      seeds: requestSeeds,
    }),
    requestDuration: histogram({
      name: "pods_api_request_duration_seconds",
      help: "Time to answer a List or Get call (watches are long-lived and not timed).",
      labelNames: ["server_api_version", "method"],
      buckets: TIME_BUCKETS,
    }),
    watchEventsDropped: counter({
      name: "kubelet_pod_watch_events_dropped_total",
      help: "Watch events dropped because a client did not consume its stream fast enough.",
    }),
    watchEventsCoalesced: counter({
      name: "pods_api_watch_events_coalesced_total",
      help: "Queued watch events replaced by a newer event of the same pod.",
    }),
    watchersDropped: counter({
      name: "pods_api_watchers_dropped_total",
      help: "Watch streams ended with RESOURCE_EXHAUSTED because their queue overflowed.",
      labelNames: ["server_api_version"],
      seeds: { server_api_version: SURFACES },
    }),
    watchers: gauge({
      name: "pods_api_watchers",
      help: "Open watches, by surface (http for the HTTP API); --max-watchers bounds their sum.",
      labelNames: ["server_api_version"],
    }),
    rateLimited: counter({
      name: "pods_api_rate_limited_total",
      help: "List and Get calls (gRPC and HTTP) rejected by a token bucket, by method.",
      labelNames: ["method"],
      seeds: { method: ["list", "get"] },
    }),
    refused: counter({
      name: "pods_api_requests_refused_total",
      help:
        "Calls refused before being served, by surface (v1alpha1, v1, podsapi_v1, http) and reason (rate_limited, not_synced, shutting_down, too_many_watchers).",
      labelNames: ["surface", "reason"],
      seeds: { surface: SURFACES, reason: REFUSAL_REASONS },
    }),
    httpRequests: counter({
      name: "pods_api_http_requests_total",
      help: "Requests to the Kubernetes-compatible HTTP API, by verb and HTTP status code.",
      labelNames: ["verb", "code"],
    }),
    podEvents: counter({
      name: "pods_api_pod_events_total",
      help: "Pod changes published to watchers, by event type.",
      labelNames: ["type"],
      seeds: { type: ["ADDED", "MODIFIED", "DELETED"] },
    }),
    cachePods: gauge({
      name: "pods_api_cache_pods",
      help: "Pods held in the cache.",
    }),
    cacheContainers: gauge({
      name: "pods_api_cache_containers",
      help: "Containers (init, regular and ephemeral) of the pods in the cache.",
    }),
    cachePodsByPhase: gauge({
      name: "pods_api_cache_pods_by_phase",
      help: "Pods currently served, by status.phase (Unknown when a pod has none).",
      labelNames: ["phase"],
    }),
    relistDuration: histogram({
      name: "pods_api_relist_duration_seconds",
      help: "Duration of one full read of a pod source.",
      labelNames: ["source"],
      buckets: TIME_BUCKETS,
    }),
    relistErrors: counter({
      name: "pods_api_relist_errors_total",
      help: "Failed reads of a pod source, by reason.",
      labelNames: ["source", "reason"],
    }),
    relistLastSuccess: gauge({
      name: "pods_api_relist_last_success_timestamp_seconds",
      help: "Unix time of the last successful read of a pod source.",
      labelNames: ["source"],
    }),
    relistWakeupsCoalesced: counter({
      name: "pods_api_relist_wakeups_coalesced_total",
      help:
        "Change events that found their pod source already due for a relist (during a read or --relist-min-interval): one read covers them.",
      labelNames: ["source"],
    }),
    sourceSynced: gauge({
      name: "pods_api_source_synced",
      help: "1 once a pod source has completed its first full read.",
      labelNames: ["source"],
    }),
    sourcePods: gauge({
      name: "pods_api_source_pods",
      help: "Pods a source reported at its last successful read.",
      labelNames: ["source"],
    }),
    sourceItemsRejected: counter({
      name: "pods_api_source_items_rejected_total",
      help: "Items a pod source skipped as invalid, by reason.",
      labelNames: ["source", "reason"],
    }),
    sourceFieldsUnrepresentable: counter({
      name: "pods_api_source_fields_unrepresentable_total",
      help:
        "Values in pods a source sent that the v1.Pod protobuf schema cannot carry (unknown fields, wrong types), left out of the served bytes, by source.",
      labelNames: ["source"],
    }),
    runtimeReachable: gauge({
      name: "pods_api_runtime_reachable",
      help: "1 when the container runtime answered the last relist.",
    }),
    runtimeEvents: counter({
      name: "pods_api_runtime_events_total",
      help:
        "Container events from the runtime's GetContainerEvents stream, by outcome: applied (its statuses taken into the view at once), covered (overtaken: older than the last relist, which read its change, or than a removal already taken in), relist (woke a relist: without statuses, as containerd's sandbox DELETED, or naming something made while the last relist read).",
      labelNames: ["outcome"],
      seeds: { outcome: ["applied", "covered", "relist"] },
    }),
    runtimeProcessReads: counter({
      name: "pods_api_runtime_process_reads_total",
      help:
        "Verbose ContainerStatus reads of a container a runtime event showed running with no init process known yet, by outcome: taken (process lookups find it at once), none (no live PID, or the container left meanwhile), failed (the call failed; the next relist reads it).",
      labelNames: ["outcome"],
      seeds: { outcome: ["taken", "none", "failed"] },
    }),
    processLookups: counter({
      name: "pods_api_process_lookups_total",
      help:
        "PodQuery Get by host PID, cgroup ID, cgroup path or mount namespace, by outcome: found, not_found (not in a pod's container), invalid (bad input), unavailable (/proc or the cgroup tree not readable), exhausted (the daemon had no file descriptor left to read /proc).",
      labelNames: ["outcome"],
      seeds: { outcome: ["found", "not_found", "invalid", "unavailable", "exhausted"] },
    }),
    processNamespacesUnreadable: counter({
      name: "pods_api_process_namespaces_unreadable_total",
      help:
        "Containers whose init process' mount namespace the kernel would not show (/proc/PID/ns/mnt of another user needs CAP_SYS_PTRACE): not found by --mntns, found by everything else.",
    }),
    socketProblems: counter({
      name: "pods_api_socket_problems_total",
      help:
        "API socket file found removed (recreated, rebind_failed), replaced by something that is not a socket (replaced), or by another live server's socket (taken).",
      labelNames: ["problem"],
      seeds: { problem: ["recreated", "rebind_failed", "replaced", "taken"] },
    }),
    residentMemory: gauge({
      name: "pods_api_resident_memory_bytes",
      help: "Resident memory of the daemon, in bytes.",
      collect() {
        this.set(Deno.memoryUsage().rss);
      },
    }),
    heapUsed: gauge({
      name: "pods_api_heap_used_bytes",
      help: "V8 heap in use by the daemon, in bytes.",
      collect() {
        this.set(Deno.memoryUsage().heapUsed);
      },
    }),
    connections: gauge({
      name: "pods_api_connections",
      help: "Open client connections on the API socket.",
    }),
    connectionsAccepted: counter({
      name: "pods_api_connections_accepted_total",
      help: "Client connections accepted on the API socket.",
    }),
    transportErrors: counter({
      name: "pods_api_transport_errors_total",
      help:
        "Connections and streams ended for cause: protocol (GOAWAY), stream (RST_STREAM), internal (our code threw), refused (connection limit), handler (INTERNAL), with the HTTP/2 error code.",
      labelNames: ["kind", "code"],
      seeds: [
        { kind: ["protocol", "stream"], code: H2_ERROR_NAMES },
        { kind: ["refused", "handler", "internal"], code: [""] },
      ],
    }),
    connectionsRefused: counter({
      name: "pods_api_connections_refused_total",
      help:
        "Connections a listener (socket, http_api, metrics) closed as soon as it accepted them: limit (its connection cap), shutting_down.",
      labelNames: ["listener", "reason"],
      seeds: { listener: LISTENERS, reason: ["limit", "shutting_down"] },
    }),
    acceptErrors: counter({
      name: "pods_api_accept_errors_total",
      help:
        "Accepts that failed, by listener and error code (EMFILE, ENFILE, ENOMEM...); the listener waits (5 ms doubling to 1 s) and accepts again.",
      labelNames: ["listener", "code"],
    }),
    connectionsTimedOut: counter({
      name: "pods_api_connections_timed_out_total",
      help:
        "Connections of a TCP listener (http_api, metrics) closed because a deadline passed: tls_handshake, read_header, idle, write.",
      labelNames: ["listener", "deadline"],
      seeds: {
        listener: ["http_api", "metrics"],
        deadline: ["tls_handshake", "read_header", "idle", "write"],
      },
    }),
    apiserverWatchRestarts: counter({
      name: "pods_api_apiserver_watch_restarts_total",
      help:
        "API server watches opened again (from the last resourceVersion, no relist) after they ended: timeout (the server's timeoutSeconds), stalled (no end within timeoutSeconds plus grace), broken (the connection broke), error (a failed request), gone (410: a relist follows).",
      labelNames: ["reason"],
      seeds: { reason: ["timeout", "stalled", "broken", "error", "gone"] },
    }),
    apiserverRelists: counter({
      name: "pods_api_apiserver_relists_total",
      help:
        "Full lists of the node's pods from the API server: initial (start), gone (after 410 Gone).",
      labelNames: ["reason"],
      seeds: { reason: ["initial", "gone"] },
    }),
    apiserverWatchEvents: counter({
      name: "pods_api_apiserver_watch_events_total",
      help:
        "Watch events received from the API server, by type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).",
      labelNames: ["type"],
      seeds: { type: ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"] },
    }),
    apiserverLastEvent: gauge({
      name: "pods_api_apiserver_last_event_timestamp_seconds",
      help:
        "Unix time of the last list or watch event (bookmarks included) from the API server; its age is time() minus this.",
    }),
    apiserverErrors: counter({
      name: "pods_api_apiserver_errors_total",
      help:
        "Failed requests to the API server, by cause: http_401, http_403, http_429, http_5xx, http_4xx, tls, dns, connect, timeout, invalid_json, too_large, credentials.",
      labelNames: ["cause"],
      seeds: {
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
    }),
    podResourcesPolls: counter({
      name: "pods_api_podresources_polls_total",
      help:
        "Calls to the kubelet's podresources API (list at the relist period, get_allocatable every minute).",
      labelNames: ["call"],
      seeds: { call: ["list", "get_allocatable"] },
    }),
    podResourcesErrors: counter({
      name: "pods_api_podresources_errors_total",
      help:
        "Failed podresources calls, by call and reason (rate_limited: the kubelet answered RESOURCE_EXHAUSTED and the daemon backed off).",
      labelNames: ["call", "reason"],
    }),
    podResourcesAvailable: gauge({
      name: "pods_api_podresources_available",
      help: "1 while the kubelet's podresources API answers; 0 when it is absent or failing.",
    }),
    podResourcesPods: gauge({
      name: "pods_api_podresources_pods",
      help:
        "Pods of the last podresources answer holding something, by join: matched (to a pod UID), no_pod (no such pod known yet), held_back (the name's known pod is not the one the kubelet runs).",
      labelNames: ["join"],
    }),
    devices: gauge({
      name: "pods_api_devices",
      help:
        "Devices by resource (device plugin resource, DRA driver, or cpu for exclusive CPUs) and state: allocated (held by a container) or free (allocatable, held by none).",
      labelNames: ["resource", "state"],
    }),
    kubeletPodsApiConnected: gauge({
      name: "pods_api_kubelet_pods_api_connected",
      help: "1 while the watch on the kubelet's Pods API is open and past its initial list.",
    }),
    kubeletPodsApiReconnects: counter({
      name: "pods_api_kubelet_pods_api_reconnects_total",
      help:
        "New WatchPods streams on the kubelet's Pods API after a synced one ended, by why it ended (closed, resource_exhausted, unavailable, failed_precondition, error).",
      labelNames: ["reason"],
      seeds: {
        reason: [
          "closed",
          "failed_precondition",
          "resource_exhausted",
          "unavailable",
          "unimplemented",
          "error",
        ],
      },
    }),
    kubeletPodsApiEvents: counter({
      name: "pods_api_kubelet_pods_api_events_total",
      help: "WatchPods events received from the kubelet's Pods API, by event type.",
      labelNames: ["type"],
      seeds: { type: ["added", "modified", "deleted"] },
    }),
    compatSocketServing: gauge({
      name: "pods_api_compat_socket_serving",
      help: "1 while the daemon serves v1alpha1.Pods on the kubelet's socket path.",
    }),
    compatSocketYielded: counter({
      name: "pods_api_compat_socket_yielded_total",
      help:
        "Times another server (a kubelet) took the compatibility socket's path and the daemon gave it up.",
    }),
    invariantCorrections: counter({
      name: "pods_api_invariant_corrections_total",
      help:
        "Pod updates adjusted to keep watch invariants (phase regressions, lost deletionTimestamp).",
      labelNames: ["kind"],
      seeds: {
        kind: ["phase_empty", "phase_regression", "phase_terminal", "deletion_timestamp"],
      },
    }),
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
