/**
 * Holds a source's first successful read back until a delay has passed, so
 * the sync gate stays closed for a while (demo and tests of FAILED_PRECONDITION).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { PodSnapshot } from "../model/pod.ts";
import { type PolledSource, SourceUnavailableError } from "./mod.ts";

/**
 * Wraps a source so that reads fail with reason `initializing` until
 * `delayMs` after the first read; once a read got through, it stays synced.
 *
 * @param source The source to wrap.
 * @param options The delay and the clock measuring it.
 * @returns A source of the same kind, with the same period, change watch and close.
 * @throws {RangeError} When `delayMs` is negative or not finite.
 */
export function withFirstSyncDelay(
  source: PolledSource,
  options: { delayMs: number; clock: Clock },
): PolledSource {
  if (!(Number.isFinite(options.delayMs) && options.delayMs >= 0)) {
    throw new RangeError(`First sync delay must be a finite number >= 0: got "${options.delayMs}"`);
  }
  if (options.delayMs === 0) return source;
  let readyAt: number | undefined;
  let ready = false;
  const wrapped: PolledSource = {
    kind: source.kind,
    list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
      if (!ready) {
        readyAt ??= options.clock.now() + options.delayMs;
        if (options.clock.now() < readyAt) {
          return Promise.reject(
            new SourceUnavailableError("Source is still initializing", { reason: "initializing" }),
          );
        }
        ready = true;
      }
      return source.list(signal);
    },
  };
  // The wrapped source's capabilities stay its own.
  return Object.assign(wrapped, {
    ...(source.periodMs === undefined ? {} : { periodMs: source.periodMs }),
    ...(source.watchChanges ? { watchChanges: source.watchChanges.bind(source) } : {}),
    ...(source.close ? { close: source.close.bind(source) } : {}),
  });
}
