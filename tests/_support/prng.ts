/**
 * The tests' one pseudo-random generator: mulberry32, small and seeded, so a
 * failing fuzz or churn run replays exactly from its seed.
 *
 * @module
 */

/** A small seeded PRNG (mulberry32): the same seed gives the same inputs. */
export class Prng {
  #state: number;

  /** @param seed Any 32-bit integer. */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** @returns A float in [0, 1). */
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /**
   * @param n Exclusive upper bound.
   * @returns An integer in [0, n).
   */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /**
   * @param items A non-empty list.
   * @returns One of them.
   */
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /**
   * @param length How many bytes.
   * @returns Random bytes.
   */
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = this.int(256);
    return out;
  }
}

/**
 * A seeded generator as a bare function, for tests that only need floats.
 *
 * @param seed Any 32-bit integer.
 * @returns A function returning floats in [0, 1).
 */
export function prng(seed: number): () => number {
  const generator = new Prng(seed);
  return () => generator.next();
}
