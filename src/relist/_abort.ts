/**
 * An abort-aware wait for the relist loop.
 *
 * @module
 */

/**
 * Settles like `promise`, or rejects with `signal.reason` as soon as the
 * signal aborts, so a callee that ignores its signal cannot hang the caller.
 *
 * @param promise The work.
 * @param signal Abandons the wait.
 * @returns The work's value.
 * @throws The work's error, or the signal's reason.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
