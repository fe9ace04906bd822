/**
 * What the grpc-js peer tests share: Node and Deno run the same client,
 * tests/interop/_grpcjs_client.mjs, through the common cycle body.
 *
 * @module
 */

import { peerCycles } from "./_peer_cycles.ts";
import type { PeerRun } from "./_peer_harness.ts";

/** The client script both runtimes run. */
export const GRPCJS_CLIENT = new URL("./_grpcjs_client.mjs", import.meta.url).pathname;

/** The grpc-js version the peers use (the one deno.json pins). */
export const GRPCJS_VERSION = "1.14.7";

/**
 * Runs the grpc-js cycles against a fresh daemon child and checks its health.
 *
 * @param label For messages, e.g. "grpc-js (Node)".
 * @param run Runs the client with these arguments.
 */
export function grpcJsCycles(
  label: string,
  run: (args: string[], killWhen?: string) => Promise<PeerRun>,
): Promise<void> {
  return peerCycles({
    label,
    run,
    ciCycles: 600,
    warmCycles: 60,
    flagPrefix: "--",
    statusNames: ["OK", "CANCELLED", "DEADLINE_EXCEEDED", "NOT_FOUND"],
    killAt: "progress 8\n",
  });
}
