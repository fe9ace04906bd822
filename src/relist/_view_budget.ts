/**
 * How often a source's own view may be handed on: a token bucket of
 * {@linkcode VIEW_BURST} hand-ons, one more earned per interval. A storm of
 * changes is handed on once per interval, as before; a few changes after a
 * quiet spell (the kubelet creating and starting a container, a few ms
 * apart) each go at once instead of the second waiting out the interval.
 *
 * @module
 */

/** Hand-ons that may go back to back after a quiet spell. */
export const VIEW_BURST = 10;

/** The bucket. Times are the relister's clock, in ms. */
export class ViewBudget {
  readonly #interval: number;
  #tokens = VIEW_BURST;
  #countedAt = -Infinity;

  /** @param interval One hand-on is earned per this many ms (0: no limit). */
  constructor(interval: number) {
    this.#interval = interval;
  }

  /**
   * @param now The clock's time.
   * @returns How long a hand-on must wait from `now`, in ms (0: it may go now).
   */
  wait(now: number): number {
    if (this.#interval === 0) return 0;
    this.#count(now);
    return this.#tokens >= 1 ? 0 : (1 - this.#tokens) * this.#interval;
  }

  /**
   * Spends one hand-on (it went at `now`).
   *
   * @param now The clock's time.
   */
  take(now: number): void {
    if (this.#interval === 0) return;
    this.#count(now);
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  #count(now: number): void {
    const earned = this.#countedAt === -Infinity
      ? VIEW_BURST
      : (now - this.#countedAt) / this.#interval;
    this.#tokens = Math.min(VIEW_BURST, this.#tokens + Math.max(0, earned));
    this.#countedAt = now;
  }
}
