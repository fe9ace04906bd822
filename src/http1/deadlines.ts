/**
 * The deadlines of a server's connections on one timer: a sweep every tick
 * that expires what is due. Arming a deadline is a map write, where a timer
 * per deadline cost a `setTimeout` and a `clearTimeout` for each read and
 * write of every request (with four per request, listing 110 pods over the
 * HTTP API ran at a third of its rate). A deadline never fires early, and
 * less than two ticks late. Time is counted in ticks of the clock's timers, so a
 * step of the wall clock moves no deadline.
 *
 * @module
 */

import type { CancelTimer, Clock } from "../clock.ts";

/** What a deadline expires. */
export interface Expiring {
  expire(): void;
}

/**
 * The tick for a set of deadlines: a tenth of the shortest, from 5 ms to 1 s.
 *
 * @param shortestMs The shortest deadline the server arms.
 * @returns The sweep period, ms.
 */
export function tickFor(shortestMs: number): number {
  return Math.min(1000, Math.max(5, Math.floor(shortestMs / 10)));
}

/** Deadlines swept every `tickMs` on one timer, running only while some are armed. */
export class DeadlineSweep {
  readonly #clock: Clock;
  readonly #tickMs: number;
  readonly #due = new Map<Expiring, number>();
  #tick = 0;
  #cancel: CancelTimer | undefined;

  /**
   * @param clock Whose timers the sweep runs on.
   * @param tickMs The sweep period.
   */
  constructor(clock: Clock, tickMs: number) {
    this.#clock = clock;
    this.#tickMs = tickMs;
  }

  /**
   * Expires `item` once `ms` have passed (and less than two ticks more), replacing its deadline.
   *
   * @param item What to expire.
   * @param ms From now; `Infinity` disarms.
   */
  arm(item: Expiring, ms: number): void {
    if (ms === Infinity) return this.disarm(item);
    // The next sweep may come at once, so it does not count: one tick more than the length.
    this.#due.set(item, this.#tick + Math.ceil(ms / this.#tickMs) + 1);
    this.#cancel ??= this.#clock.setTimer(this.#tickMs, () => this.#sweep());
  }

  /** Forgets `item`'s deadline. */
  disarm(item: Expiring): void {
    this.#due.delete(item);
  }

  /** Stops the sweep; deadlines armed later start it again. */
  stop(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    this.#due.clear();
  }

  #sweep(): void {
    this.#tick++;
    for (const [item, due] of this.#due) {
      if (due > this.#tick) continue;
      this.#due.delete(item);
      item.expire();
    }
    this.#cancel = this.#due.size === 0
      ? undefined
      : this.#clock.setTimer(this.#tickMs, () => this.#sweep());
  }
}
