/**
 * Waiting that a signal can cut short: every loop of the daemon (relists,
 * rescans, retries) waits through this one function, on the system clock or
 * on an injected one.
 *
 * @module
 */

import { type Clock, systemClock } from "./clock.ts";

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/**
 * A {@linkcode Sleep} on `clock`'s timers: with a `FakeClock` it ends when
 * the clock is advanced past it.
 *
 * @example Usage
 * ```ts
 * import { FakeClock } from "./clock.ts";
 * import { clockSleep } from "./sleep.ts";
 * const clock = new FakeClock();
 * const done = clockSleep(clock)(1000, new AbortController().signal);
 * clock.advance(1000);
 * await done;
 * ```
 *
 * @param clock The clock whose timers the waits use.
 * @returns The sleep function.
 */
export function clockSleep(clock: Clock): Sleep {
  return (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        cancel();
        signal.removeEventListener("abort", done);
        resolve();
      };
      const cancel = clock.setTimer(ms, done);
      signal.addEventListener("abort", done, { once: true });
    });
}

/**
 * Waits `ms` milliseconds of real time, or until `signal` aborts, whichever
 * comes first.
 *
 * @example Usage
 * ```ts
 * import { abortableSleep } from "./sleep.ts";
 * await abortableSleep(1, AbortSignal.timeout(1000));
 * ```
 *
 * @param ms How long to wait.
 * @param signal Ends the wait early.
 * @returns Resolves (never rejects) when the time is up or the signal aborted.
 */
export const abortableSleep: Sleep = clockSleep(systemClock);
