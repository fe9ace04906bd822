/**
 * Copies of small messages out of a read buffer, carved from shared slabs.
 * A copy of its own (`Uint8Array.slice`) gives each message a new backing
 * store, which in Deno costs about a microsecond to make and more to
 * collect: for a unary request of 50 bytes that was the largest single
 * cost of the gRPC layer. A slab's bytes are written once and never
 * reused, so a copy stays as independent of the read buffer as a slice,
 * and of every other copy; the slab is freed when its last copy is.
 *
 * A long-lived copy (a watch's request) keeps its slab alive: slabs are
 * small so that this pins at most a few KiB, and a message above
 * {@linkcode SMALL_MESSAGE_BYTES} gets a backing store of its own.
 *
 * @module
 */

/** The largest message carved from a slab. */
const SMALL_MESSAGE_BYTES = 512;
const SLAB_BYTES = 4096;

let slab = new ArrayBuffer(SLAB_BYTES);
let used = 0;

/**
 * An independent copy of `length` bytes of `from` at `offset`.
 *
 * @param from The read buffer (may be reused afterwards).
 * @param offset Where the message starts.
 * @param length The message's length, within `from`.
 * @returns A copy that no later write to `from` or to a slab changes.
 */
export function copyMessage(from: Uint8Array, offset: number, length: number): Uint8Array {
  if (length > SMALL_MESSAGE_BYTES) return from.slice(offset, offset + length);
  if (SLAB_BYTES - used < length) {
    slab = new ArrayBuffer(SLAB_BYTES);
    used = 0;
  }
  const copy = new Uint8Array(slab, used, length);
  for (let i = 0; i < length; i++) copy[i] = from[offset + i]!;
  used += length;
  return copy;
}
