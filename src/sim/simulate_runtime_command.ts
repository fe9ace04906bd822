/**
 * `pods-api simulate-runtime`: a simulated node served as a CRI runtime in a
 * process of its own, for `pods-api serve --container-runtime-endpoint` to
 * read through its real CRI source. Benchmarks and memory figures use this
 * shape so that the simulator's memory and CPU are never counted as the
 * daemon's.
 *
 * @module
 */

import { parseArgs } from "node:util";
import type { Clock } from "../clock.ts";
import { numericDefault } from "../config_flags.ts";
import { parseDuration } from "../duration.ts";
import { LOG_LEVELS, type Logger, type LogLevel } from "../log.ts";
import { SimulatedNode } from "./node/mod.ts";
import { startSimulatedRuntime } from "./runtime/mod.ts";

/** The usage of `simulate-runtime`, for `pods-api --help` and `simulate-runtime --help`. */
export const SIMULATE_RUNTIME_USAGE =
  "  pods-api simulate-runtime --socket PATH [--pods N] [--churn R] [--seed S] [--sync-period D]";

const HELP = `Serve a simulated node as a CRI runtime (runtime.v1.RuntimeService) on a UNIX socket,
for pods-api serve --container-runtime-endpoint unix://PATH to read in another process.

Usage:
${SIMULATE_RUNTIME_USAGE}

Flags:
  --socket PATH        Socket to serve on (absolute; a stale socket there is replaced)
  --pods N             Pods on the node (default ${numericDefault("simulate-pods")})
  --churn R            Changes per second: creates, deletes, restarts, phase moves (default ${
  numericDefault("simulate-churn")
})
  --seed S             Seed of the node (default ${numericDefault("simulate-seed")})
  --sync-period D      How often the runtime catches up with the node (default 100ms)
  --node-name NAME     The node's name (default sim-node-1)
  --log-level LEVEL    debug, info, warn or error (default info)

Prints one JSON line {"endpoint": "unix://PATH", "pods": N} once serving; stops on SIGTERM or SIGINT.`;

/** The parsed flags of `simulate-runtime`. */
export interface SimulateRuntimeOptions {
  readonly socket: string;
  readonly pods: number;
  readonly churn: number;
  readonly seed: number;
  readonly syncPeriodMs: number;
  readonly nodeName: string;
  readonly logLevel: LogLevel;
}

function count(name: string, text: string, integer: boolean): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`--${name} must be a non-negative number: got "${text}"`);
  }
  if (integer && !Number.isSafeInteger(value)) {
    throw new RangeError(`--${name} must be a whole number: got "${text}"`);
  }
  return value;
}

/**
 * Parses the flags of `simulate-runtime`.
 *
 * @example Usage
 * ```ts
 * import { parseSimulateRuntimeFlags } from "./simulate_runtime_command.ts";
 * parseSimulateRuntimeFlags(["--socket", "/tmp/sim.sock", "--pods", "110"]).pods; // 110
 * ```
 *
 * @param args The arguments after `simulate-runtime`.
 * @returns The options, or `"help"` for `--help`.
 * @throws {TypeError} For an unknown flag or a missing or relative `--socket`.
 * @throws {RangeError} For a count, rate or period out of range.
 */
export function parseSimulateRuntimeFlags(
  args: readonly string[],
): SimulateRuntimeOptions | "help" {
  const { values } = parseArgs({
    args: [...args],
    options: {
      socket: { type: "string" },
      pods: { type: "string" },
      churn: { type: "string" },
      seed: { type: "string" },
      "sync-period": { type: "string" },
      "node-name": { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return "help";
  const socket = values.socket ?? "";
  if (!socket.startsWith("/")) {
    throw new TypeError(`--socket must be an absolute path: got "${socket}"`);
  }
  const level = values["log-level"] ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new RangeError(`--log-level must be one of ${LOG_LEVELS.join(", ")}: got "${level}"`);
  }
  const syncPeriodMs = parseDuration(values["sync-period"] ?? "100ms");
  if (syncPeriodMs <= 0) throw new RangeError("--sync-period must be above 0");
  return {
    socket,
    pods: values.pods === undefined
      ? numericDefault("simulate-pods")
      : count("pods", values.pods, true),
    churn: values.churn === undefined
      ? numericDefault("simulate-churn")
      : count("churn", values.churn, false),
    seed: values.seed === undefined
      ? numericDefault("simulate-seed")
      : count("seed", values.seed, true),
    syncPeriodMs,
    nodeName: values["node-name"] ?? "sim-node-1",
    logLevel: level as LogLevel,
  };
}

/** What {@linkcode runSimulateRuntime} needs from its process. */
export interface SimulateRuntimeDeps {
  readonly clock: Clock;
  readonly log: Logger;
  /** Stops serving when aborted. */
  readonly signal: AbortSignal;
  /** Receives the one ready line. */
  readonly out: (line: string) => void;
  /** Sees the node once it is built, before it is served (a benchmark records its changes). */
  readonly observe?: (node: SimulatedNode) => void;
}

/**
 * Serves a simulated node as a CRI runtime until `signal` aborts.
 *
 * @param options The parsed flags.
 * @param deps Clock, log, stop signal and where the ready line goes.
 * @returns When the runtime has stopped and its socket is removed.
 * @throws {Error} When the socket cannot be bound.
 */
export async function runSimulateRuntime(
  options: SimulateRuntimeOptions,
  deps: SimulateRuntimeDeps,
): Promise<void> {
  const node = new SimulatedNode({
    clock: deps.clock,
    nodeName: options.nodeName,
    pods: options.pods,
    churnPerSecond: options.churn,
    seed: options.seed,
  });
  deps.observe?.(node);
  await using runtime = await startSimulatedRuntime({
    node,
    socketPath: options.socket,
    clock: deps.clock,
    syncPeriodMs: options.syncPeriodMs,
    signal: deps.signal,
    log: deps.log,
  });
  deps.log.info("simulated runtime serving", {
    endpoint: runtime.endpoint,
    pods: options.pods,
    churn: options.churn,
  });
  deps.out(JSON.stringify({ endpoint: runtime.endpoint, pods: runtime.bridge.podCount }));
  if (!deps.signal.aborted) {
    await new Promise<void>((resolve) =>
      deps.signal.addEventListener("abort", () => resolve(), { once: true })
    );
  }
}

/** `--help` of `simulate-runtime`. */
export function simulateRuntimeHelp(): string {
  return HELP;
}
