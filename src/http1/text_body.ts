/**
 * Text response bodies written from buffers the server keeps. A large body
 * made anew for each request (a full pod list) costs its allocations, not the
 * server's logic: the joined string and the bytes read back out of a
 * `Response` are fresh pages faulted in, the head is copied in front, and V8
 * frees them only at its next collection, which they keep triggering. A
 * handler that gives its body to {@linkcode textResponse} as the parts it
 * already holds has them encoded straight after the head into a buffer reused
 * from one response to the next, with no string or buffer of the body's size
 * made per request, and sent in one write.
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";

const ENCODER = new TextEncoder();
/** Bytes kept free before the body for the head; a longer head is copied in front instead. */
const HEAD_ROOM = 1024;
/** Bytes of buffers kept between responses; a body past them gets a buffer of its own. */
const POOL_BYTES = 8 * 1024 * 1024;

const TEXT_BODIES = new WeakMap<Response, readonly string[]>();

/**
 * A response whose body is `text`, or its parts one after another, which
 * the server encodes into its reused buffer instead of reading it back out of
 * the `Response`.
 *
 * @param text The body, or its parts.
 * @param init Status and headers.
 * @returns The response; its body, read by anyone else, is joined only then.
 */
export function textResponse(text: string | readonly string[], init?: ResponseInit): Response {
  const parts = typeof text === "string" ? [text] : text;
  const body = parts.length === 1 ? parts[0]! : new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(ENCODER.encode(parts.join("")));
      controller.close();
    },
  }, { highWaterMark: 0 });
  const response = new Response(body, init);
  TEXT_BODIES.set(response, parts);
  return response;
}

/**
 * @param response A handler's response.
 * @returns Its body's parts when it was made by {@linkcode textResponse}.
 */
export function textBodyOf(response: Response): readonly string[] | undefined {
  return TEXT_BODIES.get(response);
}

/** A head and body in one buffer, and the hand-back of that buffer once written. */
export interface EncodedResponse {
  readonly bytes: Uint8Array;
  /** Called once the write is over (done or failed): the buffer may be reused. */
  release(): void;
}

/**
 * Encodes text bodies after their heads into buffers it keeps for the next
 * responses. A buffer is lent to one response until its write is over; the
 * connections answering meanwhile take others, up to `POOL_BYTES` in all.
 */
export class TextBodyEncoder {
  /** Kept buffers not lent now. */
  #free: Uint8Array[] = [];
  /** Bytes of every kept buffer, lent or not. */
  #keptBytes = 0;

  /** Bytes of the buffers kept between responses. */
  get keptBytes(): number {
    return this.#keptBytes;
  }

  /**
   * @param parts The body's parts, in order.
   * @param head The head for a body of the given byte length.
   * @returns The head and body, to be released after the write.
   */
  encode(parts: readonly string[], head: (bodyLength: number) => Uint8Array): EncodedResponse {
    let units = 0;
    for (const part of parts) units += part.length;
    // ASCII (JSON as the daemon writes it) is one byte a code unit; anything else is encoded
    // again into room for the worst case, three bytes a code unit.
    let buffer = this.#take(HEAD_ROOM + units);
    if (buffer === undefined) return alone(parts, head);
    let written = encodeParts(parts, buffer);
    if (written === undefined) {
      this.#free.push(buffer);
      buffer = this.#take(HEAD_ROOM + units * 3);
      if (buffer === undefined) return alone(parts, head);
      written = encodeParts(parts, buffer)!;
    }
    const lent = buffer;
    const release = () => void this.#free.push(lent);
    const headBytes = head(written);
    if (headBytes.length > HEAD_ROOM) {
      const bytes = concatBytes([headBytes, lent.subarray(HEAD_ROOM, HEAD_ROOM + written)]);
      release();
      return { bytes, release: NOTHING };
    }
    lent.set(headBytes, HEAD_ROOM - headBytes.length);
    return { bytes: lent.subarray(HEAD_ROOM - headBytes.length, HEAD_ROOM + written), release };
  }

  /** A kept buffer of at least `size` bytes, taken out of the free ones; none past the pool's bound. */
  #take(size: number): Uint8Array | undefined {
    const fits = this.#free.findIndex((b) => b.length >= size);
    if (fits >= 0) return this.#free.splice(fits, 1)[0];
    let grown = 4096;
    while (grown < size) grown *= 2;
    // A free buffer too small for this body is dropped to make room for one that fits.
    while (this.#keptBytes + grown > POOL_BYTES && this.#free.length > 0) {
      this.#keptBytes -= this.#free.shift()!.length;
    }
    if (this.#keptBytes + grown > POOL_BYTES) return undefined;
    this.#keptBytes += grown;
    return new Uint8Array(grown);
  }
}

const NOTHING = () => {};

/** The parts encoded after `HEAD_ROOM`; their byte length, or nothing when they do not fit. */
function encodeParts(parts: readonly string[], buffer: Uint8Array): number | undefined {
  let at = HEAD_ROOM;
  for (const part of parts) {
    const { read, written } = ENCODER.encodeInto(part, buffer.subarray(at));
    if (read < part.length) return undefined;
    at += written;
  }
  return at - HEAD_ROOM;
}

/** A head and body in a buffer of their own (the pool has no room for it). */
function alone(
  parts: readonly string[],
  head: (bodyLength: number) => Uint8Array,
): EncodedResponse {
  const body = ENCODER.encode(parts.join(""));
  return { bytes: concatBytes([head(body.length), body]), release: NOTHING };
}
