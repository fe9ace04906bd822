/**
 * Every flag of `pods-api serve`: name, type, default and help, in one table
 * that drives parsing, the config file, `--help` and `--print-config`.
 *
 * @module
 */

/** How a flag's value is read. */
export type FlagType = "string" | "boolean" | "integer" | "number" | "duration";

/** One flag of `serve`. */
export interface FlagSpec {
  readonly type: FlagType;
  /** Default as the user would type it. */
  readonly default: string | boolean;
  readonly help: string;
}

/** The flags of `pods-api serve`, by name. */
export const SERVE_FLAGS = {
  "config": {
    type: "string",
    default: "",
    help: "Config file (YAML or JSON) whose keys are these flag names; flags win over it",
  },
  "socket": {
    type: "string",
    default: "/var/lib/kubelet/pods-api/pods-api.sock",
    help: "UNIX socket the Pods API listens on (directory made 0750, socket 0660)",
  },
  "socket-group": {
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
    type: "string",
    default: "",
    help:
      "Node IP reported as status.hostIP (comma-separated for dual stack; default: first non-loopback address)",
  },
  "container-runtime-endpoint": {
    type: "string",
    default: "",
    help:
      "CRI runtime endpoint, e.g. unix:///run/containerd/containerd.sock (default: autodetect containerd, CRI-O)",
  },
  "runtime-request-timeout": {
    type: "duration",
    default: "2m",
    help:
      "Timeout of one CRI call; the list and inspect calls of a relist use the shorter of this and 10s",
  },
  "runtime-wait-timeout": {
    type: "duration",
    default: "5m",
    help:
      "How long serve waits at start for the runtime to answer (retries 250ms doubling to 5s apart, /readyz says why meanwhile) before exiting 3; 0s: try once",
  },
  "pod-manifest-path": {
    type: "string",
    default: "",
    help: "Static pod manifest directory (or file), as the kubelet's flag; empty: none",
  },
  "file-check-frequency": {
    type: "duration",
    default: "20s",
    help: "Rescan period of --pod-manifest-path (file events trigger earlier rescans)",
  },
  "kubelet-url": {
    type: "string",
    default: "",
    help:
      "Local kubelet to read full pod specs from /pods, e.g. https://127.0.0.1:10250 or http://127.0.0.1:10255; empty: none",
  },
  "kubelet-token-file": {
    type: "string",
    default: "",
    help: "Bearer token file for --kubelet-url (default: the service account token, if present)",
  },
  "kubelet-client-cert": {
    type: "string",
    default: "",
    help: "Client certificate for --kubelet-url",
  },
  "kubelet-client-key": { type: "string", default: "", help: "Client key for --kubelet-url" },
  "kubelet-ca-file": {
    type: "string",
    default: "",
    help:
      "CA bundle that signed the kubelet's serving certificate (e.g. /var/lib/kubelet/pki/kubelet.crt)",
  },
  "kubelet-insecure-skip-tls-verify": {
    type: "boolean",
    default: false,
    help:
      "Do not verify the kubelet's certificate (only effective when Deno runs with --unsafely-ignore-certificate-errors; prefer --kubelet-ca-file)",
  },
  "kubelet-poll-period": {
    type: "duration",
    default: "10s",
    help: "Poll period of --kubelet-url /pods",
  },
  "source-best-effort": {
    type: "string",
    default: "",
    help:
      "Comma-separated sources (cri, kubelet, static) that stop blocking the sync gate after --source-best-effort-timeout",
  },
  "source-best-effort-timeout": {
    type: "duration",
    default: "30s",
    help: "How long a best-effort source may keep the sync gate closed",
  },
  "relist-period": {
    type: "duration",
    default: "1s",
    help: "How often pod sources are relisted (the kubelet's PLEG relist period)",
  },
  "relist-threshold": {
    type: "duration",
    default: "3m",
    help: "/readyz fails when a source has not relisted successfully for this long",
  },
  "rate-limit-qps": {
    type: "number",
    default: "100",
    help: "ListPods and GetPod requests per second (shared token bucket)",
  },
  "rate-limit-burst": { type: "integer", default: "10", help: "Token bucket burst size" },
  "watch-queue-size": {
    type: "integer",
    default: "100",
    help: "Events a watcher may have pending before it is dropped with RESOURCE_EXHAUSTED",
  },
  "max-watchers": {
    type: "integer",
    default: "1000",
    help: "Concurrent WatchPods streams allowed; more get RESOURCE_EXHAUSTED",
  },
  "connection-rate-limit-qps": {
    type: "number",
    default: "50",
    help:
      "PodQuery List and Get requests per second per client connection, taken before the shared bucket",
  },
  "connection-rate-limit-burst": {
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
  "tombstone-ttl": {
    type: "duration",
    default: "5m",
    help: "How long a deleted pod's last state stays retrievable (PodQuery Get include_deleted)",
  },
  "http-bind-address": {
    type: "string",
    default: "",
    help:
      "host:port of the Kubernetes-compatible HTTP API (/pods, /api/v1/...); empty: off. Keep it on loopback",
  },
  "http-token-file": {
    type: "string",
    default: "",
    help: "File holding the bearer token the HTTP API requires; empty: no authentication",
  },
  "http-tls-cert-file": {
    type: "string",
    default: "",
    help:
      "PEM certificate (chain) for HTTPS on --http-bind-address; empty: plain HTTP, or with --http-token-file a self-signed one in --http-cert-dir",
  },
  "http-tls-private-key-file": {
    type: "string",
    default: "",
    help: "PEM private key of --http-tls-cert-file",
  },
  "http-cert-dir": {
    type: "string",
    default: "/var/lib/kubelet/pods-api/pki",
    help:
      "With --http-token-file and no --http-tls-cert-file: where the HTTP API keeps the self-signed certificate it serves HTTPS with (made when missing, as the kubelet's --cert-dir)",
  },
  "http-watch-bookmark-period": {
    type: "duration",
    default: "1m",
    help: "How often an HTTP watch with allowWatchBookmarks=true gets a BOOKMARK when idle",
  },
  "simulate": {
    type: "boolean",
    default: false,
    help: "Serve a built-in simulated node instead of the container runtime (demo, tests)",
  },
  "simulate-pods": { type: "integer", default: "30", help: "Pods on the simulated node" },
  "simulate-churn": {
    type: "number",
    default: "1",
    help: "Changes per second on the simulated node (creates, deletes, restarts, phase moves)",
  },
  "simulate-seed": { type: "integer", default: "1", help: "Seed of the simulated node" },
  "simulate-sync-delay": {
    type: "duration",
    default: "0s",
    help: "Delay before the simulated node's first sync (to see FAILED_PRECONDITION)",
  },
  "log-level": { type: "string", default: "info", help: "debug, info, warn or error" },
  "print-config": {
    type: "boolean",
    default: false,
    help: "Print the effective configuration as JSON and exit",
  },
} as const satisfies Record<string, FlagSpec>;

/** A flag name of `serve`. */
export type ServeFlag = keyof typeof SERVE_FLAGS;
