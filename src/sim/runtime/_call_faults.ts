/**
 * How a call of the simulated CRI runtime is let in: counted per method,
 * refused while the runtime is down, failed or stalled on purpose (the test
 * controls `failNext` and `stallNext` of `SimCriRuntime`).
 *
 * @module
 */

import {
  CRI_METHODS,
  CRI_STATUS,
  CriCallError,
  type CriMethodName,
} from "../../sources/cri/mod.ts";

/** Every RuntimeService method name, for the call counters. */
const METHODS = Object.keys(CRI_METHODS) as CriMethodName[];

/** The call counters and injected faults of one simulated runtime. */
export class CallFaults {
  /** Calls per method since creation or {@linkcode CallFaults.resetCalls}. */
  readonly calls: Record<CriMethodName, number>;
  /** While true, every call fails with UNAVAILABLE (the runtime is down). */
  down = false;
  readonly #failures = new Map<CriMethodName, { code: number; times: number; message: string }>();
  readonly #stalls = new Set<CriMethodName>();

  constructor() {
    this.calls = Object.fromEntries(METHODS.map((m) => [m, 0])) as Record<CriMethodName, number>;
  }

  /** Sets every call counter back to 0. */
  resetCalls(): void {
    for (const m of METHODS) this.calls[m] = 0;
  }

  /**
   * Makes the next `times` calls of `method` fail with `code`.
   *
   * @param method The method.
   * @param code A gRPC status code ({@linkcode CRI_STATUS}).
   * @param options How many calls fail and with what message.
   */
  failNext(
    method: CriMethodName,
    code: number,
    options: { times?: number; message?: string } = {},
  ): void {
    this.#failures.set(method, {
      code,
      times: options.times ?? 1,
      message: options.message ?? "injected failure",
    });
  }

  /**
   * Makes the next call of `method` never answer.
   *
   * @param method The method.
   */
  stallNext(method: CriMethodName): void {
    this.#stalls.add(method);
  }

  /**
   * Counts a call, and throws its fault if it has one.
   *
   * @param method The method called.
   * @throws {CriCallError} While down (UNAVAILABLE), or the injected failure.
   */
  enter(method: CriMethodName): void {
    this.calls[method]++;
    if (this.down) {
      throw new CriCallError("connection refused", { code: CRI_STATUS.unavailable, method });
    }
    const failure = this.#failures.get(method);
    if (failure !== undefined) {
      if (--failure.times <= 0) this.#failures.delete(method);
      throw new CriCallError(failure.message, { code: failure.code, method });
    }
  }

  /**
   * Runs a call's body once it is let in (never answers if stalled).
   *
   * @param method The method called.
   * @param fn The call's body.
   * @returns Its answer, or the rejection of its fault or error.
   */
  run<T>(method: CriMethodName, fn: () => T): Promise<T> {
    try {
      this.enter(method);
      if (this.#stalls.delete(method)) return new Promise<T>(() => {});
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
