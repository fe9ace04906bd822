/**
 * A set of strings that can also pick a random member in constant time.
 * Iteration order is a pure function of the operations applied, which keeps
 * the simulation deterministic.
 *
 * @module
 */

import type { Prng } from "../_prng.ts";

/** An insertion-ordered set with O(1) add, delete and random pick. */
export class IndexedSet {
  #items: string[] = [];
  #index = new Map<string, number>();

  /** Number of members. */
  get size(): number {
    return this.#items.length;
  }

  /** @returns Whether `item` is a member. */
  has(item: string): boolean {
    return this.#index.has(item);
  }

  /** Adds `item` (no-op when present). */
  add(item: string): void {
    if (this.#index.has(item)) return;
    this.#index.set(item, this.#items.length);
    this.#items.push(item);
  }

  /** Removes `item` (no-op when absent); moves the last member into its slot. */
  delete(item: string): void {
    const at = this.#index.get(item);
    if (at === undefined) return;
    const last = this.#items.pop()!;
    this.#index.delete(item);
    if (last !== item) {
      this.#items[at] = last;
      this.#index.set(last, at);
    }
  }

  /** @returns A random member, or `undefined` when empty. */
  pick(prng: Prng): string | undefined {
    if (this.#items.length === 0) return undefined;
    return this.#items[Math.floor(prng.next() * this.#items.length)];
  }
}
