/**
 * Time as an injected dependency: tests, benchmarks and the simulator drive
 * the {@linkcode FakeClock}, production reads the system's. Nothing else in
 * the daemon calls `Date.now()`.
 *
 * @module
 */

/** A source of wall-clock time in milliseconds since the epoch. */
export interface Clock {
  /** @returns Milliseconds since the Unix epoch. */
  now(): number;
}

/** The system clock. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * A manually driven {@linkcode Clock}.
 *
 * @example Usage
 * ```ts
 * import { FakeClock } from "./clock.ts";
 * const clock = new FakeClock(Date.UTC(2026, 0, 1));
 * clock.advance(1500);
 * console.log(clock.now());
 * ```
 */
export class FakeClock implements Clock {
  #nowMs: number;

  /**
   * @param startMs The initial time in epoch milliseconds. @default {2026-01-01T00:00:00Z}
   * @throws {TypeError} When `startMs` is not a finite number.
   */
  constructor(startMs = Date.UTC(2026, 0, 1)) {
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
