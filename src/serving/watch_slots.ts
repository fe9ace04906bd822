/**
 * The one pool of watch slots: `--max-watchers` bounds the open watches of
 * every surface together (both Pods services, PodQuery, the HTTP API), so a
 * flood on any of them costs at most that many watchers.
 *
 * @module
 */

/** A fixed number of slots, taken and given back. */
export class WatchSlots {
  /** Slots in all. */
  readonly limit: number;
  #used = 0;

  /**
   * @param limit Slots in all; a positive integer.
   * @throws {RangeError} When `limit` is not a positive integer.
   */
  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(
        `Cannot create watch slots: limit "${limit}" must be a positive integer`,
      );
    }
    this.limit = limit;
  }

  /** Slots taken now. */
  get used(): number {
    return this.#used;
  }

  /**
   * Takes a slot if one is free.
   *
   * @returns A function that gives the slot back (a second call does nothing),
   *   or `undefined` when every slot is taken.
   */
  tryTake(): (() => void) | undefined {
    if (this.#used >= this.limit) return undefined;
    this.#used++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#used--;
    };
  }
}
