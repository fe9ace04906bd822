/**
 * Time as an injected dependency: reading it and waiting on it. Tests,
 * benchmarks and the simulator drive the {@linkcode FakeClock}, production
 * uses the system's. Nothing else in the daemon calls `Date.now()` or sets a
 * timer of its own for time-dependent behaviour (bookmarks, deadlines,
 * keepalive, grace periods); the few I/O timeouts that must fire on real
 * time say so where they call {@linkcode systemClock}.
 *
 * @module
 */

/** Cancels a timer; harmless once it fired, or when called again. */
export type CancelTimer = () => void;

/** A source of wall-clock time in milliseconds since the epoch, and of timers. */
export interface Clock {
  /** @returns Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Calls `fn` once, `ms` milliseconds from now. Timers run on elapsed time:
   * a step of the wall clock neither fires nor delays them.
   *
   * @param ms Delay; 0 or less fires as soon as the clock can, `Infinity` never.
   * @param fn Called once, never synchronously from `setTimer`.
   * @returns Cancels the timer.
   * @throws {RangeError} When `ms` is NaN.
   */
  setTimer(ms: number, fn: () => void): CancelTimer;
}

/** The longest delay `setTimeout` honours (2^31 - 1 ms); a longer one fires at once. */
const MAX_TIMEOUT_MS = 0x7fffffff;

function checkDelay(ms: number): void {
  if (Number.isNaN(ms)) throw new RangeError(`Cannot set a timer of "${ms}" ms`);
}

/** `setTimeout` for any delay: one longer than it can hold is waited out in parts. */
function systemTimer(ms: number, fn: () => void): CancelTimer {
  checkDelay(ms);
  if (ms === Infinity) return () => {};
  let handle: ReturnType<typeof setTimeout>;
  const arm = (left: number): void => {
    handle = left > MAX_TIMEOUT_MS
      ? setTimeout(() => arm(left - MAX_TIMEOUT_MS), MAX_TIMEOUT_MS)
      : setTimeout(fn, Math.max(0, left));
  };
  arm(ms);
  return () => clearTimeout(handle);
}

/** The system clock: `Date.now()` and `setTimeout`. */
export const systemClock: Clock = { now: () => Date.now(), setTimer: systemTimer };

interface FakeTimer {
  /** Elapsed time at which it fires. */
  readonly due: number;
  /** Order among timers due at the same time: the one set first fires first. */
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * A manually driven {@linkcode Clock}. Its timers fire only inside
 * {@linkcode FakeClock.advance}, in the order they fall due (those set for
 * the same time in the order they were set), each with the clock reading its
 * own due time; a timer set by another one's callback fires in the same
 * advance when it falls due within it.
 *
 * @example Usage
 * ```ts
 * import { FakeClock } from "./clock.ts";
 * const clock = new FakeClock(Date.UTC(2026, 0, 1));
 * const cancel = clock.setTimer(1000, () => console.log("a second passed"));
 * clock.advance(1500); // logs "a second passed"
 * cancel(); // too late: it fired
 * console.log(clock.now());
 * ```
 */
export class FakeClock implements Clock {
  #nowMs: number;
  /** Time advanced so far: timers keep to it, so `set()` moves none of them. */
  #elapsed = 0;
  #seq = 0;
  /** Pending timers, sorted by due time then `seq`. */
  readonly #timers: FakeTimer[] = [];
  /** Callers of `waitForTimers()` and the count each waits for. */
  readonly #waiters: { count: number; withinMs: number; resolve: () => void }[] = [];

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

  /** Timers set and neither fired nor cancelled. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * @param ms Delay; 0 or less fires at the next {@linkcode FakeClock.advance}, even by 0.
   * @param fn Called when the clock is advanced past the delay.
   * @returns Cancels the timer.
   * @throws {RangeError} When `ms` is NaN.
   */
  setTimer(ms: number, fn: () => void): CancelTimer {
    checkDelay(ms);
    if (ms === Infinity) return () => {};
    const timer: FakeTimer = { due: this.#elapsed + Math.max(0, ms), seq: this.#seq++, fn };
    const timers = this.#timers;
    let lo = 0;
    let hi = timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (timers[mid]!.due <= timer.due) lo = mid + 1;
      else hi = mid;
    }
    timers.splice(lo, 0, timer);
    for (const waiter of [...this.#waiters]) {
      if (!this.#ready(waiter)) continue;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    return () => {
      const at = timers.indexOf(timer);
      if (at >= 0) timers.splice(at, 1);
    };
  }

  /**
   * Waits until at least `count` pending timers fall due within `withinMs`:
   * a test advances the clock once the code under test has armed what it
   * waits on, not before (`withinMs` tells that timer from longer ones).
   *
   * @param count Timers to wait for. @default {1}
   * @param withinMs Only timers due this soon count. @default {Infinity}
   * @returns Resolves at once when that many are pending already.
   * @throws {RangeError} When `count` is not a positive integer.
   */
  waitForTimers(count = 1, withinMs = Infinity): Promise<void> {
    if (!(Number.isInteger(count) && count >= 1)) {
      throw new RangeError(`Cannot wait for "${count}" timers`);
    }
    const waiter = { count, withinMs, resolve: () => {} };
    if (this.#ready(waiter)) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    waiter.resolve = resolve;
    this.#waiters.push(waiter);
    return promise;
  }

  #ready(waiter: { count: number; withinMs: number }): boolean {
    const timer = this.#timers[waiter.count - 1];
    return timer !== undefined && timer.due - this.#elapsed <= waiter.withinMs;
  }

  /**
   * Moves time forward, firing every timer that falls due on the way in
   * order. A timer that throws ends the advance at its due time; the error
   * propagates.
   *
   * @param ms Milliseconds to add.
   * @throws {RangeError} When `ms` is negative or not finite.
   */
  advance(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(`Cannot advance the clock by "${ms}" ms`);
    }
    const target = this.#elapsed + ms;
    for (;;) {
      const next = this.#timers[0];
      if (next === undefined || next.due > target) break;
      this.#timers.shift();
      this.#nowMs += next.due - this.#elapsed;
      this.#elapsed = next.due;
      next.fn();
    }
    this.#nowMs += target - this.#elapsed;
    this.#elapsed = target;
  }

  /**
   * Sets the wall-clock time (also backwards, to test clock steps). Timers
   * run on elapsed time, as the system's do: none fires or moves.
   *
   * @param ms Epoch milliseconds.
   * @throws {TypeError} When `ms` is not a finite number.
   */
  set(ms: number): void {
    if (!Number.isFinite(ms)) throw new TypeError(`Time must be a finite number: got "${ms}"`);
    this.#nowMs = ms;
  }
}
