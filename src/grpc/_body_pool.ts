/**
 * Buffers for large response messages a caller decodes at once and lets go
 * of: the CRI client's list answers (tens of KB per node of a hundred pods,
 * MBs at a thousand, several times a second). A fresh buffer per answer was
 * a large block for the runtime to make and the collector to free on every
 * relist; keeping them makes a quiet relist measurably cheaper
 * (BENCHMARKS.md, "Design figures").
 *
 * A buffer is lent for one message and comes back only through
 * {@linkcode BodyPool.give}, after whatever read it kept nothing of it: a
 * view still held when the buffer is lent again would see the next message.
 * A buffer not given back is simply collected. Few are kept, each a power of
 * two between {@linkcode POOLED_BODY_MIN_BYTES} and
 * {@linkcode POOLED_BODY_MAX_BYTES}, so what is kept is bounded by what the
 * largest answers need.
 *
 * @module
 */

/** Messages below this get a buffer of their own. */
export const POOLED_BODY_MIN_BYTES = 32 * 1024;
/** Messages above this get a buffer of their own (a runaway answer is not kept). */
export const POOLED_BODY_MAX_BYTES = 16 * 1024 * 1024;
/** Buffers kept: the two lists of a relist, with room for one more of each. */
const MAX_KEPT = 4;

/** Buffers lent for one message each and given back. */
export class BodyPool {
  readonly #kept: ArrayBufferLike[] = [];
  /** Buffers lent and not given back: only those are taken back. */
  readonly #lent = new WeakSet<ArrayBufferLike>();

  /**
   * A buffer for one message of `length` bytes: a pooled one when the length
   * is within the pooled range, else one of its own.
   *
   * @param length The message's length.
   * @returns A view of exactly `length` bytes.
   */
  take(length: number): Uint8Array {
    if (length < POOLED_BODY_MIN_BYTES || length > POOLED_BODY_MAX_BYTES) {
      return new Uint8Array(length);
    }
    const kept = this.#kept;
    // The smallest kept buffer that holds it.
    let best = -1;
    for (let i = 0; i < kept.length; i++) {
      const size = kept[i]!.byteLength;
      if (size >= length && (best < 0 || size < kept[best]!.byteLength)) best = i;
    }
    let buffer: ArrayBufferLike;
    if (best >= 0) {
      buffer = kept[best]!;
      kept.splice(best, 1);
    } else {
      let size = POOLED_BODY_MIN_BYTES;
      while (size < length) size *= 2;
      buffer = new ArrayBuffer(size);
    }
    this.#lent.add(buffer);
    return new Uint8Array(buffer, 0, length);
  }

  /**
   * Gives a message's buffer back once nothing holds the message or a view
   * of it. A message that did not come from this pool's buffers, or one
   * given back already, is ignored.
   *
   * @param message A message read into a buffer from {@linkcode BodyPool.take}.
   */
  give(message: Uint8Array): void {
    const buffer = message.buffer;
    if (!this.#lent.delete(buffer)) return;
    const kept = this.#kept;
    if (kept.length < MAX_KEPT) {
      kept.push(buffer);
      return;
    }
    // Full: keep the larger ones, which are the costly ones to make again.
    let smallest = 0;
    for (let i = 1; i < kept.length; i++) {
      if (kept[i]!.byteLength < kept[smallest]!.byteLength) smallest = i;
    }
    if (kept[smallest]!.byteLength < buffer.byteLength) kept[smallest] = buffer;
  }
}

/** The process's pool, for every channel. */
export const BODY_POOL: BodyPool = new BodyPool();
