/**
 * Exponential backoff with full jitter, as client-go's and gRPC's reconnect
 * loops use: many clients cut off at the same moment (a daemon restart) must
 * not all come back in the same millisecond.
 *
 * @module
 */

/** Options of {@linkcode Backoff}. */
export interface BackoffOptions {
  /** First delay before jitter, ms. @default {200} */
  initialMs?: number;
  /** Largest delay before jitter, ms. @default {10000} */
  maxMs?: number;
  /** Growth per attempt. @default {2} */
  factor?: number;
  /**
   * Share of each delay that is random: 0.5 waits between half and all of
   * the nominal delay. @default {0.5}
   */
  jitter?: number;
  /**
   * Spread the jitter on both sides of the nominal delay, as grpc-go's
   * connection backoff does: 0.2 waits between 0.8 and 1.2 times it.
   * @default {false}
   */
  centered?: boolean;
  /** A number in [0, 1); injected by tests. @default {Math.random} */
  random?: () => number;
}

/**
 * Delays for successive retries: `initialMs`, then times `factor` up to
 * `maxMs`, each shortened (or, `centered`, moved either way) by a random
 * share of at most `jitter`.
 *
 * @example Usage
 * ```ts
 * import { Backoff } from "./backoff.ts";
 * const backoff = new Backoff({ initialMs: 100, maxMs: 1000, random: () => 0 });
 * backoff.next(); // 100
 * backoff.next(); // 200
 * backoff.reset();
 * ```
 */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #centered: boolean;
  readonly #random: () => number;
  #attempt = 0;

  /**
   * Creates a backoff at its first delay.
   *
   * @param options Delays, growth and jitter.
   * @throws {RangeError} For a negative delay, a factor below 1 or a jitter outside [0, 1].
   */
  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 200;
    this.#maxMs = options.maxMs ?? 10_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0.5;
    this.#centered = options.centered ?? false;
    this.#random = options.random ?? Math.random;
    if (this.#initialMs < 0 || this.#maxMs < this.#initialMs) {
      throw new RangeError(`Cannot back off from ${this.#initialMs} ms to ${this.#maxMs} ms`);
    }
    if (this.#factor < 1) throw new RangeError(`Cannot back off by factor ${this.#factor}`);
    if (this.#jitter < 0 || this.#jitter > 1) {
      throw new RangeError(`Cannot use jitter ${this.#jitter}: use 0 to 1`);
    }
  }

  /** Retries since the last {@linkcode Backoff.reset}. */
  get attempts(): number {
    return this.#attempt;
  }

  /**
   * The next delay; each call counts one retry.
   *
   * @returns The delay before the next retry, ms.
   */
  next(): number {
    const nominal = Math.min(this.#maxMs, this.#initialMs * this.#factor ** this.#attempt);
    this.#attempt++;
    const share = this.#centered ? 2 * this.#random() - 1 : -this.#random();
    return Math.round(nominal * (1 + this.#jitter * share));
  }

  /** Starts over from `initialMs` (after a success). */
  reset(): void {
    this.#attempt = 0;
  }
}
