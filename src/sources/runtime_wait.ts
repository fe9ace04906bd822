/**
 * Waiting for the container runtime at start-up. On a booting node the
 * runtime often comes up after pods-api (containerd slow to start, k3s
 * whose service is not in the unit's `After=`); exiting at once would
 * restart the unit in a tight loop until systemd's start limit gives up on
 * it. Instead the daemon retries the runtime's Version handshake with capped
 * exponential backoff for `--runtime-wait-timeout`, says why it is not ready
 * meanwhile, and exits 3 only after that.
 *
 * @module
 */

import { Backoff } from "../backoff.ts";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";

/** First pause between two attempts. */
export const RUNTIME_WAIT_INITIAL_DELAY_MS = 250;
/** Longest pause between two attempts: a runtime that appears is found within this. */
export const RUNTIME_WAIT_MAX_DELAY_MS = 5_000;

/** Where the wait stands, for `/readyz` and the log. */
export interface RuntimeWaitStatus {
  /** Attempts made so far. */
  readonly attempts: number;
  /** Why the last attempt failed. */
  readonly lastError: string;
  /** Time since the first attempt. */
  readonly waitedMs: number;
  /** The limit (`--runtime-wait-timeout`). */
  readonly limitMs: number;
}

/** Options of {@linkcode waitForRuntime}. */
export interface RuntimeWaitOptions {
  /** Give up after this long (0: one attempt). */
  limitMs: number;
  clock: Clock;
  log: Logger;
  /** Ends the wait (shutdown): the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called after each failed attempt that will be retried. */
  onWaiting?: (status: RuntimeWaitStatus) => void;
  /** Tests pass a fake that advances their clock. @default {abortableSleep} */
  sleep?: Sleep;
}

/**
 * The `/readyz` reason while waiting.
 *
 * @param status Where the wait stands.
 * @returns One line.
 */
export function runtimeWaitReason(status: RuntimeWaitStatus): string {
  return `waiting for the container runtime (attempt ${status.attempts}, ` +
    `${Math.round(status.waitedMs / 1000)}s of --runtime-wait-timeout=${
      Math.round(status.limitMs / 1000)
    }s): ${status.lastError}`;
}

/**
 * Calls `connect` until it succeeds, retrying only the errors `retryable`
 * accepts, with pauses of 250 ms doubling up to 5 s, for at most `limitMs`.
 *
 * @example Usage
 * ```ts
 * import { waitForRuntime } from "./runtime_wait.ts";
 * import { systemClock } from "../clock.ts";
 * import { createLogger } from "../log.ts";
 * const version = await waitForRuntime(() => Promise.resolve("containerd"), (e) => false, {
 *   limitMs: 60_000, clock: systemClock, log: createLogger({ level: "error" }),
 * });
 * ```
 *
 * @typeParam T What `connect` returns.
 * @param connect One attempt.
 * @param retryable Whether an attempt's error may go away by waiting.
 * @param options Limit, clock, log, signal, progress callback.
 * @returns What the first successful attempt returned.
 * @throws The last attempt's error when the limit is reached, any error
 *   `retryable` refuses at once, or the signal's reason when it aborts.
 */
export async function waitForRuntime<T>(
  connect: () => Promise<T>,
  retryable: (error: unknown) => boolean,
  options: RuntimeWaitOptions,
): Promise<T> {
  const { clock, log, limitMs } = options;
  const signal = options.signal ?? new AbortController().signal;
  const sleep = options.sleep ?? abortableSleep;
  const backoff = new Backoff({
    initialMs: RUNTIME_WAIT_INITIAL_DELAY_MS,
    maxMs: RUNTIME_WAIT_MAX_DELAY_MS,
    jitter: 0,
  });
  const started = clock.now();
  for (let attempts = 1;; attempts++) {
    signal.throwIfAborted();
    try {
      const result = await connect();
      if (attempts > 1) {
        log.info("container runtime answered", { attempts, waitedMs: clock.now() - started });
      }
      return result;
    } catch (err) {
      if (!retryable(err)) throw err;
      const waitedMs = clock.now() - started;
      const remaining = limitMs - waitedMs;
      if (remaining <= 0) throw err;
      const status: RuntimeWaitStatus = {
        attempts,
        lastError: err instanceof Error ? err.message : String(err),
        waitedMs,
        limitMs,
      };
      // Loud once, then quiet: a slow boot is not an error until the limit.
      const retryInMs = Math.min(backoff.next(), remaining);
      const fields = { ...status, retryInMs };
      if (attempts === 1) log.warn("waiting for the container runtime", fields);
      else log.debug("container runtime still unavailable", fields);
      options.onWaiting?.(status);
      await sleep(retryInMs, signal);
    }
  }
}
