/**
 * One HTTP/2 flow-control window (RFC 9113 section 6.9): how many DATA
 * payload bytes may still be sent (or received) before a WINDOW_UPDATE.
 *
 * @module
 */

import { MAX_INT31 } from "./frames.ts";

/** A window; it may go negative after the peer lowers SETTINGS_INITIAL_WINDOW_SIZE. */
export class FlowWindow {
  #size: number;

  /** @param size The starting size. */
  constructor(size: number) {
    this.#size = size;
  }

  /** Bytes available now (may be negative). */
  get size(): number {
    return this.#size;
  }

  /** @param bytes DATA payload bytes sent or received. */
  consume(bytes: number): void {
    this.#size -= bytes;
  }

  /**
   * Grows the window (WINDOW_UPDATE, or a larger initial window).
   *
   * @param delta Bytes to add; may be negative for a smaller initial window.
   * @returns `false` when the window would pass 2^31 - 1 (a FLOW_CONTROL_ERROR).
   */
  grow(delta: number): boolean {
    if (this.#size + delta > MAX_INT31) return false;
    this.#size += delta;
    return true;
  }
}
