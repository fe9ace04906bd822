/**
 * Waiting that a signal can cut short: every loop of the daemon (relists,
 * rescans, retries) waits through this one function.
 *
 * @module
 */

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/**
 * Waits `ms` milliseconds, or until `signal` aborts, whichever comes first.
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
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
