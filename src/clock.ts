/**
 * Time as an injected dependency: tests drive a fake clock, production reads
 * the system's. Nothing else in the daemon calls `Date.now()`.
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
