/**
 * The grpc-js peer tests' common body (Node and Deno run the same client,
 * tests/interop/_grpcjs_client.mjs): warm-up, baseline, the cycles with every
 * close order, a kill -9 mid-run, then the daemon health checks.
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

/** The client script both runtimes run. */
export const GRPCJS_CLIENT = new URL("./_grpcjs_client.mjs", import.meta.url).pathname;

/** The grpc-js version the peers use (the one deno.json pins). */
export const GRPCJS_VERSION = "1.14.7";

interface JsSummary {
  cycles: number;
  "calls_ok": number;
  "watch_events": number;
  statuses: Record<string, number>;
  closes: Record<string, number>;
  unexpected: string[];
  seconds: number;
}

/** Options of {@linkcode grpcJsCycles}. */
export interface GrpcJsCyclesOptions {
  /** For messages, e.g. "grpc-js (Node)". */
  label: string;
  /** Runs the client with these extra arguments (socket, cycles, ...). */
  run(args: string[], killWhen?: string): Promise<PeerRun>;
  /** Cycles without `PODS_API_LONG`. */
  ciCycles: number;
}

/**
 * Runs the grpc-js cycles against a fresh daemon child and checks its health.
 *
 * @param options The peer.
 */
export async function grpcJsCycles(options: GrpcJsCyclesOptions): Promise<void> {
  const cycles = cycleCount(options.ciCycles);
  await using daemon = await startPeerDaemon();
  const client = (n: number, extra: string[] = [], killWhen?: string) =>
    options.run([
      "--socket",
      daemon.socket,
      "--cycles",
      String(n),
      "--parallel",
      "4",
      ...extra,
    ], killWhen);

  const warm = lastJson<JsSummary>(await client(60), `${options.label} warm-up`);
  assert.deepEqual(warm.unexpected, []);
  const before = await baseline(daemon.pid);

  const run = await daemon.child.explain(() => client(cycles));
  const summary = lastJson<JsSummary>(run, options.label);
  await log(
    `${options.label}: ${summary.cycles} cycles in ${summary.seconds.toFixed(1)} s, ` +
      `${summary.calls_ok} calls OK, ${summary.watch_events} watch events; statuses ` +
      `${formatStatuses(summary.statuses)}; closes ${formatStatuses(summary.closes)}`,
  );
  assert.deepEqual(summary.unexpected, [], run.stderr);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(summary.cycles, cycles);
  for (const code of ["OK", "CANCELLED", "DEADLINE_EXCEEDED", "NOT_FOUND"]) {
    assert.ok((summary.statuses[code] ?? 0) > 0, `no ${code} seen`);
  }

  // kill -9 with calls in flight on four connections.
  const killed = await client(1_000_000, ["--progress"], "progress 8\n");
  assert.notEqual(killed.code, 0, `${options.label} should have been killed`);

  await assertDaemonHealthy(daemon, before, options.label);
}
