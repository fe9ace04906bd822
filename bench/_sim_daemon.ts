/**
 * The flags every benchmark starts `bench/load/sim_daemon.ts` with: a
 * simulated node of a given size and churn, a socket, a free metrics port,
 * no effective rate limit (the benchmarks measure the transport, not the
 * token bucket) and quiet logs.
 *
 * @module
 */

/** Options of {@linkcode simDaemonFlags}. */
export interface SimDaemonFlagOptions {
  pods: number;
  churn: number;
  relistPeriod: string;
  /** Per-watcher queue. @default {100} */
  queue?: number;
  socket: string;
  /** Where the daemon writes its change timeline (live latency). */
  timeline: string;
}

/**
 * @param options Node size, churn, relist period, queue, socket and timeline.
 * @returns The flags, after the daemon mode flag.
 */
export function simDaemonFlags(options: SimDaemonFlagOptions): string[] {
  return [
    "--timeline",
    options.timeline,
    "--simulate",
    "--simulate-pods",
    String(options.pods),
    "--simulate-churn",
    String(options.churn),
    "--relist-period",
    options.relistPeriod,
    "--socket",
    options.socket,
    // Never the kubelet's path on the machine the bench runs on.
    "--kubelet-compat-socket=",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--rate-limit-qps",
    "1e9",
    "--rate-limit-burst",
    "1000000",
    "--watch-queue-size",
    String(options.queue ?? 100),
    "--log-level",
    "warn",
  ];
}
