/**
 * A token bucket for the ListPods/GetPod rate limit, refilled lazily from an
 * injected clock: no timers, nothing to stop.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { numericDefault } from "../config_flags.ts";

/**
 * Requests per second allowed by default; the kubelet's podresources API uses
 * the same value, which keeps a polling agent well below what the node can
 * serve.
 */
export const DEFAULT_QPS = numericDefault("rate-limit-qps");
/** Requests allowed in a burst by default, as the kubelet's podresources API. */
export const DEFAULT_BURST = numericDefault("rate-limit-burst");

/**
 * Tokens are kept in integer units of a millionth of a token, so refills of
 * whole milliseconds at whole qps add up exactly (no 0.1 + 0.2 drift).
 */
const UNITS_PER_TOKEN = 1_000_000;
/** Tolerance, in units, for floating-point error in one refill. */
const EPSILON_UNITS = 1e-6;

/** Something that admits or rejects a call. */
export interface RateLimiter {
  /** @returns `true` when the call may proceed. */
  tryTake(): boolean;
}

/** Options of {@linkcode TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second; finite and above zero. */
  qps: number;
  /** Bucket size: the most calls admitted at once; an integer, at least 1. */
  burst: number;
  /** Time source. */
  clock: Clock;
}

/**
 * A token bucket of `burst` tokens refilled at `qps` tokens a second. It starts
 * full. Each admitted call takes one token; an empty bucket rejects. The
 * refill is computed on each call from the time elapsed since the previous
 * one; a clock that steps back refills nothing and restarts from the new time.
 *
 * @example
 * ```ts
 * import { TokenBucket } from "./token_bucket.ts";
 * import { FakeClock } from "../clock.ts";
 *
 * const clock = new FakeClock(0);
 * const bucket = new TokenBucket({ qps: 100, burst: 1, clock });
 * console.assert(bucket.tryTake() && !bucket.tryTake());
 * clock.advance(10); // 10 ms at 100 qps: one token
 * console.assert(bucket.tryTake());
 * ```
 */
export class TokenBucket implements RateLimiter {
  /** Tokens added per second. */
  readonly qps: number;
  /** Bucket size in tokens. */
  readonly burst: number;
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #unitsPerMs: number;
  #units: number;
  /** Fraction of a unit earned but not yet credited (in [0, 1)). */
  #carry = 0;
  #last: number;

  /**
   * @param options Rate, size and clock.
   * @throws {RangeError} When `qps` is not a finite number above zero, or
   * `burst` is not an integer of at least 1 (and at most 2^53 / 10^6).
   */
  constructor(options: TokenBucketOptions) {
    const { qps, burst, clock } = options;
    if (typeof qps !== "number" || !Number.isFinite(qps) || qps <= 0) {
      throw new RangeError(
        `Cannot create token bucket: qps "${qps}" must be a finite number above 0`,
      );
    }
    if (
      typeof burst !== "number" || !Number.isInteger(burst) || burst < 1 ||
      burst > Math.floor(Number.MAX_SAFE_INTEGER / UNITS_PER_TOKEN)
    ) {
      throw new RangeError(
        `Cannot create token bucket: burst "${burst}" must be an integer of at least 1`,
      );
    }
    this.qps = qps;
    this.burst = burst;
    this.#clock = clock;
    this.#capacity = burst * UNITS_PER_TOKEN;
    this.#unitsPerMs = (qps * UNITS_PER_TOKEN) / 1000;
    this.#units = this.#capacity;
    this.#last = clock.now();
  }

  /**
   * Takes a token if one is available.
   *
   * @returns `true` when a token was taken (the call may proceed).
   */
  tryTake(): boolean {
    this.#refill();
    if (this.#units < UNITS_PER_TOKEN) return false;
    this.#units -= UNITS_PER_TOKEN;
    return true;
  }

  /**
   * Whole tokens available now (after refilling).
   *
   * @returns The number of calls that would be admitted right now.
   */
  available(): number {
    this.#refill();
    return Math.floor(this.#units / UNITS_PER_TOKEN);
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = now - this.#last;
    this.#last = now;
    // NaN (a broken clock) and steps back add nothing.
    if (!(elapsed > 0)) return;
    const missing = this.#capacity - this.#units;
    if (missing === 0) {
      this.#carry = 0;
      return;
    }
    const earned = elapsed * this.#unitsPerMs + this.#carry;
    if (earned >= missing) {
      this.#units = this.#capacity;
      this.#carry = 0;
      return;
    }
    const whole = Math.floor(earned + EPSILON_UNITS);
    this.#units += whole;
    this.#carry = Math.max(0, earned - whole);
  }
}
