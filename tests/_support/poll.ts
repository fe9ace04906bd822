/**
 * Waiting in a test for state that another process, a socket or a timer
 * changes: check, wait a little, check again, up to a deadline. Never a
 * fixed sleep, and never a wall-clock threshold on what is measured.
 *
 * @module
 */

/** Options of {@linkcode poll}. */
export interface PollOptions {
  /** What is awaited, for the error. @default {"a condition"} */
  readonly what?: string;
  /** Upper bound. @default {10000} */
  readonly timeoutMs?: number;
  /** Wait between checks. @default {10} */
  readonly intervalMs?: number;
}

/**
 * Calls `fn` until it returns a value other than `undefined`.
 *
 * @param fn The check.
 * @param options What is awaited, deadline and interval.
 * @returns The first value.
 * @throws {Error} When the deadline passes first.
 */
export async function poll<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  options: PollOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${options.what ?? "a condition"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 10));
  }
}

/**
 * Polls until `predicate` holds.
 *
 * @param predicate The condition.
 * @param what What is awaited, for the error.
 * @param timeoutMs Upper bound. @default {30000}
 * @throws {Error} When the deadline passes first.
 */
export async function pollUntil(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  await poll(async () => (await predicate()) ? true : undefined, { what, timeoutMs });
}
