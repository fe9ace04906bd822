/**
 * A clock that moves only when told to: for tests, benchmarks and anything
 * that must replay time deterministically.
 *
 * @module
 */

import type { Clock } from "../clock.ts";

/**
 * A manually driven {@linkcode Clock}.
 *
 * @example Usage
 * ```ts
 * import { FakeClock } from "./fake_clock.ts";
 * const clock = new FakeClock(Date.UTC(2025, 0, 1));
 * clock.advance(1500);
 * console.log(clock.now());
 * ```
 */
export class FakeClock implements Clock {
  #nowMs: number;

  /**
   * @param startMs The initial time in epoch milliseconds.
   * @throws {TypeError} When `startMs` is not a finite number.
   */
  constructor(startMs = Date.UTC(2025, 0, 1)) {
    if (!Number.isFinite(startMs)) {
      throw new TypeError(`Start time must be a finite number: got "${startMs}"`);
    }
    this.#nowMs = startMs;
  }

  /** @returns The current fake time in epoch milliseconds. */
  now(): number {
    return this.#nowMs;
  }

  /**
   * Moves time forward.
   *
   * @param ms Milliseconds to add.
   * @throws {RangeError} When `ms` is negative or not finite.
   */
  advance(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(`Cannot advance the clock by "${ms}" ms`);
    }
    this.#nowMs += ms;
  }

  /**
   * Sets the time (also backwards, to test clock steps).
   *
   * @param ms Epoch milliseconds.
   * @throws {TypeError} When `ms` is not a finite number.
   */
  set(ms: number): void {
    if (!Number.isFinite(ms)) throw new TypeError(`Time must be a finite number: got "${ms}"`);
    this.#nowMs = ms;
  }
}
