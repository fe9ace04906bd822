/**
 * The common body of the connection-cycle peer tests (grpc-go, grpc-js in
 * Node and Deno, grpcio): a fresh daemon child, a warm-up run and a
 * baseline, the cycles with every close order the client has, a kill -9
 * mid-run, then the daemon health checks. Each peer client takes the same
 * options (socket, cycles, parallel, progress) and prints the same summary.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  assertDaemonHealthy,
  baseline,
  cycleCount,
  formatStatuses,
  lastJson,
  log,
  type PeerRun,
  startPeerDaemon,
} from "./_peer_harness.ts";

/** The summary line every peer client prints last. */
interface CycleSummary {
  cycles: number;
  "calls_ok": number;
  "watch_events": number;
  statuses: Record<string, number>;
  closes: Record<string, number>;
  unexpected: string[];
  seconds: number;
}

/**
 * The close orders every peer client has, in the order it takes them: cycle
 * `i` closes with `CLOSE_ORDERS[i % 3]` (cancel an open watch then close;
 * close under an open watch; close with nothing open).
 */
export const CLOSE_ORDERS = ["cancel", "open", "graceful"] as const;

/**
 * How many of `cycles` cycles close in each order.
 *
 * @param cycles Cycles the client ran.
 * @returns Cycles per close order; an order no cycle took is absent.
 */
export function expectedCloses(cycles: number): Record<string, number> {
  const out: Record<string, number> = {};
  CLOSE_ORDERS.forEach((order, k) => {
    const n = Math.max(0, Math.ceil((cycles - k) / CLOSE_ORDERS.length));
    if (n > 0) out[order] = n;
  });
  return out;
}

/** Options of {@linkcode peerCycles}. */
export interface PeerCyclesOptions {
  /** For messages, e.g. "grpc-js (Node)". */
  label: string;
  /** Runs the client with these arguments; `killWhen` is a line of its output. */
  run(args: string[], killWhen?: string): Promise<PeerRun>;
  /** Cycles without `PODS_API_LONG`. */
  ciCycles: number;
  /** Cycles of the warm-up run before the baseline. */
  warmCycles: number;
  /** How the client spells its options: `-socket` (Go) or `--socket`. */
  flagPrefix: "-" | "--";
  /** The client's names for OK, cancelled, deadline exceeded and not found. */
  statusNames: readonly [string, string, string, string];
  /** The progress line after which the client is killed. */
  killAt: string;
}

/**
 * Runs a peer's cycles against a fresh daemon child and checks its health.
 *
 * @param options The peer.
 */
export async function peerCycles(options: PeerCyclesOptions): Promise<void> {
  const cycles = cycleCount(options.ciCycles);
  const flag = (name: string) => `${options.flagPrefix}${name}`;
  await using daemon = await startPeerDaemon();
  const client = (n: number, extra: string[] = [], killWhen?: string) =>
    options.run([
      flag("socket"),
      daemon.socket,
      flag("cycles"),
      String(n),
      flag("parallel"),
      "4",
      ...extra,
    ], killWhen);

  // Warm-up (JIT, pools, lazily opened files) before the baseline.
  const warm = lastJson<CycleSummary>(
    await client(options.warmCycles),
    `${options.label} warm-up`,
  );
  assert.deepEqual(warm.unexpected, []);
  assert.deepEqual(warm.closes, expectedCloses(options.warmCycles), "warm-up close orders");
  const before = await baseline(daemon.pid);

  const run = await daemon.child.explain(() => client(cycles));
  const summary = lastJson<CycleSummary>(run, options.label);
  await log(
    `${options.label}: ${summary.cycles} cycles in ${summary.seconds.toFixed(1)} s, ` +
      `${summary.calls_ok} calls OK, ${summary.watch_events} watch events; statuses ` +
      `${formatStatuses(summary.statuses)}; closes ${formatStatuses(summary.closes)}`,
  );
  assert.deepEqual(summary.unexpected, [], run.stderr);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(summary.cycles, cycles);
  // "Every close order" is what these tests claim: each order ran, as often
  // as the client's round robin says.
  assert.deepEqual(summary.closes, expectedCloses(cycles), "cycles per close order");
  for (const code of options.statusNames) {
    assert.ok((summary.statuses[code] ?? 0) > 0, `no ${code} seen`);
  }

  // kill -9 with calls in flight on four connections.
  const killed = await client(1_000_000, [flag("progress")], options.killAt);
  assert.notEqual(killed.code, 0, `${options.label} should have been killed`);

  await assertDaemonHealthy(daemon, before, options.label);
}
