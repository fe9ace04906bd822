/**
 * Every flag of `pods-api serve`: name, type, default, bounds and help, in one
 * table that drives parsing, the config file, `--help`, `--print-config`, the
 * shape of `ServeConfig` and the defaults components fall back to.
 *
 * A new flag is one entry here: with a `key` its parsed value lands in
 * `ServeConfig` under that name (typed from `type`, `list` and `choices`),
 * checked against `min`/`above`/`choices`, with nothing else to write.
 * Flags without a `key` have a shape of their own, built in `config.ts`.
 *
 * @module
 */

import { parseDuration } from "./duration.ts";
import { LOG_LEVELS } from "./log.ts";

/** How a flag's value is read. */
export type FlagType = "string" | "boolean" | "integer" | "number" | "duration";

/** One flag of `serve`. */
export interface FlagSpec {
  readonly type: FlagType;
  /** Default as the user would type it. */
  readonly default: string | boolean;
  readonly help: string;
  /** The `ServeConfig` property the parsed value lands in; absent for flags with a shape of their own. */
  readonly key?: string;
  /** Smallest value allowed: a number, or a duration such as `"10ms"` for a duration flag. */
  readonly min?: number | string;
  /** The value must be greater than this (rates). */
  readonly above?: number;
  /** A comma-separated list (`ServeConfig` holds the trimmed, non-empty items, without repeats). */
  readonly list?: boolean;
  /** The values allowed (each item of a list). */
  readonly choices?: readonly string[];
}

/** The flags of `pods-api serve`, by name. */
export const SERVE_FLAGS = {
  "config": {
    type: "string",
    default: "",
    help: "Config file (YAML or JSON) whose keys are these flag names; flags win over it",
  },
  "socket": {
    key: "socket",
    type: "string",
    default: "/run/pods-api/pods-api.sock",
    help:
      "UNIX socket every service listens on (directory made 0750, socket 0660); outside /var/lib/kubelet, whose Pods API path a 1.37+ kubelet serves itself",
  },
  "socket-group": {
    key: "socketGroup",
    type: "string",
    default: "root",
    help: "Group (name or gid) allowed to connect to the socket",
  },
  "metrics-bind-address": {
    type: "string",
    default: "127.0.0.1:9469",
    help: "host:port for /metrics, /healthz and /readyz; port 0 picks a free port (logged)",
  },
  "hostname-override": {
    type: "string",
    default: "",
    help: "Node name used in pods' spec.nodeName (default: the host name)",
  },
  "node-ip": {
    key: "nodeIPs",
    list: true,
    type: "string",
    default: "",
    help:
      "Node IP reported as status.hostIP (comma-separated for dual stack; default: first non-loopback address)",
  },
  "container-runtime-endpoint": {
    key: "runtimeEndpoint",
    type: "string",
    default: "",
    help:
      "CRI runtime endpoint, e.g. unix:///run/containerd/containerd.sock (default: autodetect containerd, CRI-O, k3s, cri-dockerd)",
  },
  "runtime-request-timeout": {
    key: "runtimeRequestTimeoutMs",
    min: "1ms",
    type: "duration",
    default: "2m",
    help:
      "Timeout of one CRI call; the list and inspect calls of a relist use the shorter of this and 10s",
  },
  "runtime-wait-timeout": {
    key: "runtimeWaitTimeoutMs",
    min: "0s",
    type: "duration",
    default: "5m",
    help:
      "How long serve waits at start for the runtime to answer (retries 250ms doubling to 5s apart, /readyz says why meanwhile) before exiting 3; 0s: try once",
  },
  "pod-manifest-path": {
    key: "podManifestPath",
    type: "string",
    default: "",
    help: "Static pod manifest directory (or file), as the kubelet's flag; empty: none",
  },
  "host-proc": {
    key: "hostProc",
    type: "string",
    default: "/proc",
    help:
      "The host's /proc, for process lookups (PodQuery Get by PID, cgroup, mount namespace). Deno reads /proc itself only under --allow-all: the binary reads a mount of it elsewhere (DaemonSet: /host/proc)",
  },
  "host-cgroup-root": {
    key: "hostCgroupRoot",
    type: "string",
    default: "",
    help:
      "The host's cgroup tree, for process lookups: cgroup v2 there or at its unified/ (hybrid hosts). Empty: /sys/fs/cgroup",
  },
  "file-check-frequency": {
    key: "fileCheckFrequencyMs",
    min: "100ms",
    type: "duration",
    default: "20s",
    help: "Rescan period of --pod-manifest-path (file events trigger earlier rescans)",
  },
  "kubelet-url": {
    key: "kubeletUrl",
    type: "string",
    default: "",
    help:
      "Local kubelet to read full pod specs from /pods, e.g. https://127.0.0.1:10250 or http://127.0.0.1:10255; empty: none",
  },
  "kubelet-token-file": {
    key: "kubeletTokenFile",
    type: "string",
    default: "",
    help: "Bearer token file for --kubelet-url (default: the service account token, if present)",
  },
  "kubelet-client-cert": {
    key: "kubeletClientCert",
    type: "string",
    default: "",
    help: "Client certificate for --kubelet-url",
  },
  "kubelet-client-key": {
    key: "kubeletClientKey",
    type: "string",
    default: "",
    help: "Client key for --kubelet-url",
  },
  "kubelet-ca-file": {
    key: "kubeletCaFile",
    type: "string",
    default: "",
    help:
      "CA bundle that signed the kubelet's serving certificate (e.g. /var/lib/kubelet/pki/kubelet.crt)",
  },
  "kubelet-insecure-skip-tls-verify": {
    key: "kubeletInsecureSkipTlsVerify",
    type: "boolean",
    default: false,
    help:
      "Do not verify the kubelet's certificate (only effective when Deno runs with --unsafely-ignore-certificate-errors; prefer --kubelet-ca-file)",
  },
  "kubelet-poll-period": {
    key: "kubeletPollPeriodMs",
    min: "100ms",
    type: "duration",
    default: "10s",
    help: "Poll period of --kubelet-url /pods",
  },
  "pod-resources-endpoint": {
    key: "podResourcesEndpoint",
    type: "string",
    default: "",
    help:
      "The kubelet's podresources API (unix://PATH): devices, exclusive CPUs and memory per container, joined onto pods for PodQuery (List at --relist-period, at most 10/s). Empty: unix:///var/lib/kubelet/pod-resources/kubelet.sock when that socket exists; none: off",
  },
  "kubelet-pods-api-endpoint": {
    key: "kubeletPodsApiEndpoint",
    type: "string",
    default: "/var/lib/kubelet/pods-api/pods-api.sock",
    help:
      "The kubelet's own Pods API (feature gate PodsAPI, on by default in 1.37): one WatchPods stream gives full specs and the kubelet's status; no socket there: looked for again later; none: off",
  },
  "kubelet-compat-socket": {
    key: "kubeletCompatSocket",
    type: "string",
    default: "/var/lib/kubelet/pods-api/pods-api.sock",
    help:
      "Also serve v1alpha1.Pods on the kubelet's Pods API path while no other server does (older kubelets); given up for good, logged and counted when a kubelet takes it; empty: off",
  },
  "apiserver": {
    key: "apiserver",
    type: "string",
    default: "",
    help:
      "Watch this node's pods on the API server (one list + watch per node): in-cluster (service account token, CA, KUBERNETES_SERVICE_HOST/PORT), or a URL (overrides --apiserver-kubeconfig's server); empty: off unless --apiserver-kubeconfig",
  },
  "apiserver-kubeconfig": {
    key: "apiserverKubeconfig",
    type: "string",
    default: "",
    help:
      "Kubeconfig of the API server source (server, CA, token or tokenFile, client certificate and key); setting it turns the source on",
  },
  "source-best-effort": {
    key: "bestEffortSources",
    list: true,
    choices: ["cri", "kubelet-podsapi", "kubelet", "apiserver", "static"],
    type: "string",
    default: "",
    help:
      "Comma-separated sources (cri, kubelet-podsapi, kubelet, apiserver, static) that stop blocking the sync gate after --source-best-effort-timeout",
  },
  "source-best-effort-timeout": {
    key: "bestEffortTimeoutMs",
    min: "0s",
    type: "duration",
    default: "30s",
    help: "How long a best-effort source may keep the sync gate closed",
  },
  "relist-period": {
    key: "relistPeriodMs",
    min: "10ms",
    type: "duration",
    default: "1s",
    help: "How often pod sources are relisted (the kubelet's PLEG relist period)",
  },
  "relist-min-interval": {
    key: "relistMinIntervalMs",
    min: "0s",
    type: "duration",
    default: "100ms",
    help:
      "Shortest time between the starts of two relists of a source when change events wake it (one read covers the events in between; periodic relists are never held back); at most half the source's relist period (clamped); 0s: relist at once",
  },
  "relist-threshold": {
    key: "relistThresholdMs",
    min: "1ms",
    type: "duration",
    default: "3m",
    help: "/readyz fails when a source has not relisted successfully for this long",
  },
  "rate-limit-qps": {
    key: "rateLimitQps",
    above: 0,
    type: "number",
    default: "100",
    help: "ListPods and GetPod requests per second (shared token bucket)",
  },
  "rate-limit-burst": {
    key: "rateLimitBurst",
    min: 1,
    type: "integer",
    default: "10",
    help: "Token bucket burst size",
  },
  "watch-queue-size": {
    key: "watchQueueSize",
    min: 1,
    type: "integer",
    default: "100",
    help: "Events a watcher may have pending before it is dropped with RESOURCE_EXHAUSTED",
  },
  "max-watchers": {
    key: "maxWatchers",
    min: 1,
    type: "integer",
    default: "1000",
    help:
      "Concurrent watches allowed, gRPC and HTTP together; more get RESOURCE_EXHAUSTED (HTTP 429)",
  },
  "connection-rate-limit-qps": {
    key: "connectionRateLimitQps",
    above: 0,
    type: "number",
    default: "50",
    help:
      "PodQuery and HTTP API list and get requests per second per client connection, taken before the shared bucket",
  },
  "connection-rate-limit-burst": {
    key: "connectionRateLimitBurst",
    min: 1,
    type: "integer",
    default: "5",
    help: "Burst of the per-connection token bucket",
  },
  "watch-history": {
    type: "string",
    default: "5m,10000",
    help:
      "Changes kept for resuming watches: a duration, a count, or both (duration,count); older tokens get OUT_OF_RANGE / 410",
  },
  "watch-history-bytes": {
    key: "watchHistoryBytes",
    min: 0,
    type: "integer",
    default: "8388608",
    help:
      "Memory the resumable history may hold (pod versions counted at 6x their encoded size); the oldest changes go first",
  },
  "tombstone-ttl": {
    key: "tombstoneTtlMs",
    min: "0s",
    type: "duration",
    default: "5m",
    help: "How long a deleted pod's last state stays retrievable (PodQuery Get include_deleted)",
  },
  "tombstone-bytes": {
    key: "tombstoneBytes",
    min: 0,
    type: "integer",
    default: "4194304",
    help:
      "Memory deleted pods' last states may hold (counted as for --watch-history-bytes); the oldest go first",
  },
  "http-bind-address": {
    type: "string",
    default: "",
    help:
      "host:port of the Kubernetes-compatible HTTP API (/pods, /api/v1/...); empty: off. Keep it on loopback",
  },
  "http-token-file": {
    key: "httpTokenFile",
    type: "string",
    default: "",
    help: "File holding the bearer token the HTTP API requires; empty: no authentication",
  },
  "http-tls-cert-file": {
    key: "httpTlsCertFile",
    type: "string",
    default: "",
    help:
      "PEM certificate (chain) for HTTPS on --http-bind-address; empty: plain HTTP, or with --http-token-file a self-signed one in --http-cert-dir",
  },
  "http-tls-private-key-file": {
    key: "httpTlsKeyFile",
    type: "string",
    default: "",
    help: "PEM private key of --http-tls-cert-file",
  },
  "http-cert-dir": {
    key: "httpCertDir",
    type: "string",
    default: "/var/lib/kubelet/pods-api/pki",
    help:
      "With --http-token-file and no --http-tls-cert-file: where the HTTP API keeps the self-signed certificate it serves HTTPS with (made when missing, as the kubelet's --cert-dir)",
  },
  "http-watch-bookmark-period": {
    key: "httpBookmarkPeriodMs",
    min: "10ms",
    type: "duration",
    default: "1m",
    help: "How often an HTTP watch with allowWatchBookmarks=true gets a BOOKMARK when idle",
  },
  "http-max-connections": {
    key: "httpMaxConnections",
    min: 0,
    type: "integer",
    default: "0",
    help:
      "Connections the HTTP API holds open at once; more are closed as accepted. 0: --max-watchers plus 64",
  },
  "metrics-max-connections": {
    key: "metricsMaxConnections",
    min: 1,
    type: "integer",
    default: "64",
    help: "Connections the metrics address holds open at once; more are closed as accepted",
  },
  "http-tls-handshake-timeout": {
    key: "httpTlsHandshakeTimeoutMs",
    min: "1ms",
    type: "duration",
    default: "10s",
    help: "Time an HTTPS client has to finish the TLS handshake on --http-bind-address",
  },
  "http-read-header-timeout": {
    key: "httpReadHeaderTimeoutMs",
    min: "1ms",
    type: "duration",
    default: "10s",
    help:
      "Time a client of the HTTP API or the metrics address has to send a whole request once it starts (slowloris)",
  },
  "http-idle-timeout": {
    key: "httpIdleTimeoutMs",
    min: "1ms",
    type: "duration",
    default: "90s",
    help:
      "Time a kept-alive connection to the HTTP API or the metrics address may wait for its next request",
  },
  "http-write-timeout": {
    key: "httpWriteTimeoutMs",
    min: "1ms",
    type: "duration",
    default: "60s",
    help:
      "Time each write of a response may take on the HTTP API and the metrics address; a watch stalled that long is cut",
  },
  "simulate": {
    key: "simulate",
    type: "boolean",
    default: false,
    help: "Serve a built-in simulated node instead of the container runtime (demo, tests)",
  },
  "simulate-pods": {
    key: "simulatePods",
    min: 0,
    type: "integer",
    default: "30",
    help: "Pods on the simulated node",
  },
  "simulate-churn": {
    key: "simulateChurn",
    min: 0,
    type: "number",
    default: "1",
    help: "Changes per second on the simulated node (creates, deletes, restarts, phase moves)",
  },
  "simulate-seed": {
    key: "simulateSeed",
    min: 0,
    type: "integer",
    default: "1",
    help: "Seed of the simulated node",
  },
  "simulate-sync-delay": {
    key: "simulateSyncDelayMs",
    min: "0s",
    type: "duration",
    default: "0s",
    help: "Delay before the simulated node's first sync (to see FAILED_PRECONDITION)",
  },
  "log-level": {
    key: "logLevel",
    choices: LOG_LEVELS,
    type: "string",
    default: "info",
    help: "debug, info, warn or error",
  },
  "print-config": {
    key: "printConfig",
    type: "boolean",
    default: false,
    help: "Print the effective configuration as JSON, keyed as --config takes it, and exit",
  },
} as const satisfies Record<string, FlagSpec>;

/** A flag name of `serve`. */
export type ServeFlag = keyof typeof SERVE_FLAGS;

type Flags = typeof SERVE_FLAGS;

/** The parsed value of one flag: numbers for numeric types, milliseconds for durations. */
type FlagValue<F extends FlagSpec> = F extends { readonly choices: readonly (infer C)[] }
  ? F extends { readonly list: true } ? readonly C[] : C
  : F extends { readonly list: true } ? readonly string[]
  : F["type"] extends "boolean" ? boolean
  : F["type"] extends "string" ? string
  : number;

/** The `ServeConfig` properties the flags with a `key` declare, typed from their declaration. */
export type KeyedFlagValues = {
  readonly [
    N in ServeFlag as Flags[N] extends { readonly key: infer K extends string } ? K : never
  ]: FlagValue<Flags[N]>;
};

/** A flag whose value is a number (a duration's in milliseconds). */
export type NumericFlag = {
  [N in ServeFlag]: Flags[N]["type"] extends "integer" | "number" | "duration" ? N : never;
}[ServeFlag];

/**
 * The declared default of a numeric flag, as components use it: components
 * fall back to this rather than writing the number again.
 *
 * @example Usage
 * ```ts
 * import { numericDefault } from "./config_flags.ts";
 * numericDefault("watch-queue-size"); // 100
 * numericDefault("relist-period"); // 1000 (ms)
 * ```
 *
 * @param name The flag.
 * @returns Its default; a duration's in milliseconds.
 */
export function numericDefault(name: NumericFlag): number {
  const flag: FlagSpec = SERVE_FLAGS[name];
  const text = String(flag.default);
  return flag.type === "duration" ? parseDuration(text) : Number(text);
}
