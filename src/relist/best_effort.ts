/**
 * Best-effort pod sources: a source the operator marked best-effort keeps
 * the sync gate closed only for a while. After the timeout, whichever of
 * them has not completed a first read is released, and the daemon serves
 * without it (its pods join the merged view whenever it comes back).
 *
 * @module
 */

import type { Logger } from "../log.ts";
import { abortableSleep } from "../sleep.ts";

/** The part of the sync gate this helper uses (`SyncGate` has it). */
export interface ReleasableGate {
  /** Sources still blocking the gate. */
  pending(): string[];
  /** Stops waiting for a source. */
  release(name: string): void;
}

/** Options of {@linkcode releaseBestEffortSources}. */
export interface BestEffortOptions {
  /** Names of the best-effort sources. */
  sources: readonly string[];
  /** How long they may keep the gate closed, in ms. */
  timeoutMs: number;
  log: Logger;
  /** Waits `ms` or until the signal aborts, never rejecting. @default {a timer} */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Picks the best-effort sources that still block the gate.
 *
 * @example Usage
 * ```ts
 * import { sourcesToRelease } from "./best_effort.ts";
 * sourcesToRelease(["cri", "kubelet"], ["kubelet", "static"]); // ["kubelet"]
 * ```
 *
 * @param pending Sources still blocking the gate.
 * @param bestEffort Sources marked best-effort.
 * @returns The sources to release, in `pending` order.
 */
export function sourcesToRelease(
  pending: readonly string[],
  bestEffort: readonly string[],
): string[] {
  const marked = new Set(bestEffort);
  return pending.filter((name) => marked.has(name));
}

/**
 * Waits `timeoutMs`, then releases every best-effort source that has not
 * completed its first read, logging each one. Start it with the relisters.
 *
 * @example Usage
 * ```ts
 * import { releaseBestEffortSources } from "./best_effort.ts";
 * import { SyncGate } from "./sync_gate.ts";
 * import { silentLogger } from "../log.ts";
 * import { FakeClock } from "../clock.ts";
 * const gate = new SyncGate({ sources: ["cri", "kubelet"], clock: new FakeClock(0) });
 * gate.markSynced("cri");
 * const released = await releaseBestEffortSources(gate, new AbortController().signal, {
 *   sources: ["kubelet"],
 *   timeoutMs: 30_000,
 *   log: silentLogger,
 *   sleep: () => Promise.resolve(),
 * });
 * console.assert(released[0] === "kubelet" && gate.isOpen);
 * ```
 *
 * @param gate The sync gate.
 * @param signal Cancels the wait (shutdown); nothing is released then.
 * @param options Sources, timeout, log and sleep.
 * @returns The released sources.
 * @throws {RangeError} When `timeoutMs` is negative or not a number.
 */
export async function releaseBestEffortSources(
  gate: ReleasableGate,
  signal: AbortSignal,
  options: BestEffortOptions,
): Promise<string[]> {
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs < 0) {
    throw new RangeError(
      `Cannot wait "${options.timeoutMs}" ms for best-effort sources: it must be a non-negative number`,
    );
  }
  if (options.sources.length === 0) return [];
  await (options.sleep ?? abortableSleep)(options.timeoutMs, signal);
  if (signal.aborted) return [];
  const released = sourcesToRelease(gate.pending(), options.sources);
  for (const name of released) {
    gate.release(name);
    options.log.warn("serving without best-effort source: no first read within its timeout", {
      source: name,
      timeoutMs: options.timeoutMs,
    });
  }
  return released;
}
