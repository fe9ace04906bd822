/**
 * A tiny deterministic pseudo-random generator (mulberry32): the simulated
 * node draws every random-looking value from one of these, so a seed fully
 * determines the pods it produces.
 *
 * @module
 */

const HEX = "0123456789abcdef";

/** A seeded 32-bit generator with the few draws the simulator needs. */
export class Prng {
  #state: number;

  /** @param seed Any number; only its low 32 bits matter. */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** @returns A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /**
   * @param min Smallest result.
   * @param max Largest result (inclusive).
   * @returns An integer in [min, max].
   */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** @returns `true` with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /**
   * @param items A non-empty list.
   * @returns One of its elements.
   * @throws {RangeError} When the list is empty.
   */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Cannot pick from an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /**
   * Picks an index with probability proportional to its weight.
   *
   * @param weights Non-negative weights, at least one positive.
   * @returns The chosen index.
   */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }

  /** @returns `length` lowercase hex digits. */
  hex(length: number): string {
    let out = "";
    for (let i = 0; i < length; i++) out += HEX[Math.floor(this.next() * 16)];
    return out;
  }

  /** @returns A random-looking RFC 4122 version 4 UUID. */
  uuid(): string {
    const h = this.hex(30);
    const variant = HEX[8 + Math.floor(this.next() * 4)];
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${variant}${h.slice(15, 18)}-${
      h.slice(18, 30)
    }`;
  }
}

/**
 * Hashes a string to 32 bits (FNV-1a), to derive stable per-name values
 * (image digests, template hashes) without drawing from a generator.
 *
 * @param text Any string.
 * @returns An unsigned 32-bit hash.
 */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * @param text The value to digest.
 * @param length Hex digits wanted.
 * @returns A stable hex string derived from `text` (not cryptographic).
 */
export function stableHex(text: string, length: number): string {
  return new Prng(hashString(text)).hex(length);
}
