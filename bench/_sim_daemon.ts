/**
 * `bench/load/sim_daemon.ts` as the benchmarks start it: a simulated node of
 * a given size and churn, a socket, a free metrics port, no effective rate
 * limit (the benchmarks measure the transport, not the token bucket) and
 * quiet logs; and the daemon's metrics port, read by every harness.
 *
 * @module
 */

import { PERMS, type Proc, sleep, spawnProc } from "./_child_process.ts";

const SIM_DAEMON = new URL("./load/sim_daemon.ts", import.meta.url).pathname;

/**
 * No effective rate limit, shared or per connection: the benchmarks measure
 * the daemon's work, not its token buckets.
 */
export const NO_RATE_LIMIT_FLAGS: readonly string[] = [
  "--rate-limit-qps",
  "1e9",
  "--rate-limit-burst",
  "1000000",
  "--connection-rate-limit-qps",
  "1e9",
  "--connection-rate-limit-burst",
  "1000000",
];

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
    ...NO_RATE_LIMIT_FLAGS,
    "--watch-queue-size",
    String(options.queue ?? 100),
    "--log-level",
    "warn",
  ];
}

/**
 * Polls the daemon's `/readyz` until it answers ok.
 *
 * @param port The daemon's metrics port.
 * @param pollMs The wait between polls. @default {50}
 * @param polls How many polls before giving up. @default {600}
 * @throws {Error} When it never became ready.
 */
export async function waitReady(port: number, pollMs = 50, polls = 600): Promise<void> {
  for (let i = 0; i < polls; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      await res.body?.cancel();
      if (res.ok) return;
    } catch { /* not yet */ }
    await sleep(pollMs);
  }
  throw new Error("The daemon never became ready");
}

/**
 * Reads one metric of the daemon's `/metrics`, summed over its labels.
 *
 * @param port The daemon's metrics port.
 * @param name The metric's name.
 * @returns The sum of its samples (0 when it has none).
 */
export async function metricValue(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return sum;
}

/** A running `sim_daemon.ts`. */
export interface SimDaemon {
  readonly proc: Proc;
  readonly socket: string;
  /** Its metrics port. */
  readonly port: number;
  /** Where it writes its change timeline on SIGTERM. */
  readonly timeline: string;
}

/**
 * Starts `sim_daemon.ts` and waits until it is ready.
 *
 * @param options The flags' options; `direct` serves the simulated node's
 *   pod source alone (no simulated runtime); `logPath` takes its stderr.
 * @returns The daemon.
 * @throws {Error} When it does not start or never becomes ready.
 */
export async function startSimDaemon(
  options: SimDaemonFlagOptions & { direct?: boolean; logPath: string },
): Promise<SimDaemon> {
  const proc = spawnProc(Deno.execPath(), [
    "run",
    "--frozen",
    ...PERMS,
    SIM_DAEMON,
    ...(options.direct ? ["--direct"] : []),
    ...simDaemonFlags(options),
  ], options.logPath);
  const line = await proc.firstLine;
  if (line === "") throw new Error(`The daemon did not start; see ${options.logPath}`);
  const port = (JSON.parse(line) as { metricsPort: number }).metricsPort;
  await waitReady(port);
  return { proc, socket: options.socket, port, timeline: options.timeline };
}
