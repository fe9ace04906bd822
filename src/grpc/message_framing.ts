/**
 * gRPC's length-prefixed messages: a flag byte (compressed or not), a
 * 4-byte big-endian length, then the message.
 *
 * @module
 */

import { copyMessage } from "./_small_copies.ts";
import { GrpcError, STATUS } from "./status.ts";

/** Bytes of the prefix before every message. */
export const MESSAGE_PREFIX_BYTES = 5;

const NO_BYTES = new Uint8Array(0);

function newBody(length: number): Uint8Array {
  return new Uint8Array(length);
}

/**
 * A message already carrying its prefix, ready to be written as it is. A
 * cache holds these so that a response is framed once and sent many times.
 * A message that ends with bytes a cache already holds (a pod's own
 * encoding) keeps them as its `tail`, not copied: the transport writes
 * `head` then `tail`.
 */
export class FramedMessage {
  /** The prefix and the message, or the message's start when `tail` is not empty. */
  readonly head: Uint8Array;
  /** The rest of the message; shared with whoever made it, never changed. */
  readonly tail: Uint8Array;

  /**
   * @param head The prefix and the message (or its start), as {@linkcode frameMessage} makes them.
   * @param tail The rest of the message.
   */
  constructor(head: Uint8Array, tail: Uint8Array = NO_BYTES) {
    this.head = head;
    this.tail = tail;
  }

  /** Prefix and message, bytes. */
  get byteLength(): number {
    return this.head.byteLength + this.tail.byteLength;
  }

  /** The message's size without its prefix, bytes. */
  get messageBytes(): number {
    return this.byteLength - MESSAGE_PREFIX_BYTES;
  }

  /** Prefix and message in one buffer (a copy when the message is in two parts). */
  get bytes(): Uint8Array {
    if (this.tail.byteLength === 0) return this.head;
    const bytes = new Uint8Array(this.byteLength);
    bytes.set(this.head);
    bytes.set(this.tail, this.head.byteLength);
    return bytes;
  }

  /** The message without its prefix. */
  get message(): Uint8Array {
    return this.bytes.subarray(MESSAGE_PREFIX_BYTES);
  }
}

/**
 * Prefixes a message (uncompressed).
 *
 * @param message The serialized message.
 * @returns A new buffer of prefix and message.
 */
export function frameMessage(message: Uint8Array): FramedMessage {
  return frameMessageEndingWith(message, NO_BYTES);
}

/**
 * Prefixes a message made of `start` then `end` without copying `end`.
 *
 * @param start The message's first bytes (copied behind the prefix).
 * @param end The message's last bytes, kept by reference: never change them.
 * @returns The framed message.
 */
export function frameMessageEndingWith(start: Uint8Array, end: Uint8Array): FramedMessage {
  const head = new Uint8Array(MESSAGE_PREFIX_BYTES + start.byteLength);
  new DataView(head.buffer).setUint32(1, start.byteLength + end.byteLength);
  head.set(start, MESSAGE_PREFIX_BYTES);
  return new FramedMessage(head, end);
}

/**
 * Reassembles messages from DATA chunks, copying each into a buffer of its
 * own, and refusing any above the size limit as soon as its prefix shows it.
 */
export class MessageReader {
  readonly #maxBytes: number;
  readonly #takeBody: (length: number) => Uint8Array;
  /** A prefix split across chunks; most arrive whole, and need none. */
  #prefix: Uint8Array | undefined;
  #prefixHave = 0;
  #body: Uint8Array | undefined;
  #bodyHave = 0;

  /**
   * @param maxBytes The largest message accepted.
   * @param takeBody Where a message split across chunks is put together: a
   *   new buffer by default; a `BodyPool`'s (`_body_pool.ts`) for messages the
   *   caller gives back once read.
   */
  constructor(maxBytes: number, takeBody: (length: number) => Uint8Array = newBody) {
    this.#maxBytes = maxBytes;
    this.#takeBody = takeBody;
  }

  /** Whether a message is partly read. */
  get partial(): boolean {
    return this.#prefixHave > 0;
  }

  /**
   * @param chunk DATA bytes (not kept).
   * @param onMessage Called with each complete message.
   * @throws {GrpcError} RESOURCE_EXHAUSTED above the limit; UNIMPLEMENTED for a compressed message.
   */
  push(chunk: Uint8Array, onMessage: (message: Uint8Array) => void): void {
    let offset = 0;
    while (offset < chunk.byteLength) {
      if (this.#body === undefined) {
        let prefix: Uint8Array;
        let at: number;
        if (this.#prefixHave === 0 && chunk.byteLength - offset >= MESSAGE_PREFIX_BYTES) {
          prefix = chunk;
          at = offset;
          offset += MESSAGE_PREFIX_BYTES;
          this.#prefixHave = MESSAGE_PREFIX_BYTES;
        } else {
          this.#prefix ??= new Uint8Array(MESSAGE_PREFIX_BYTES);
          const take = Math.min(MESSAGE_PREFIX_BYTES - this.#prefixHave, chunk.byteLength - offset);
          this.#prefix.set(chunk.subarray(offset, offset + take), this.#prefixHave);
          this.#prefixHave += take;
          offset += take;
          if (this.#prefixHave < MESSAGE_PREFIX_BYTES) return;
          prefix = this.#prefix;
          at = 0;
        }
        if (prefix[at] !== 0) {
          throw new GrpcError(
            STATUS.UNIMPLEMENTED,
            "Cannot read a compressed message: only identity encoding is supported",
          );
        }
        const length = (prefix[at + 1]! * 0x1000000) +
          ((prefix[at + 2]! << 16) | (prefix[at + 3]! << 8) | prefix[at + 4]!);
        if (length > this.#maxBytes) {
          throw new GrpcError(
            STATUS.RESOURCE_EXHAUSTED,
            `Cannot accept a message of ${length} bytes: the limit is ${this.#maxBytes}`,
          );
        }
        if (chunk.byteLength - offset >= length) {
          // The whole message is here (a unary request): one copy, no view.
          const message = copyMessage(chunk, offset, length);
          offset += length;
          this.#prefixHave = 0;
          onMessage(message);
          continue;
        }
        this.#body = this.#takeBody(length);
        this.#bodyHave = 0;
      }
      const take = Math.min(this.#body.byteLength - this.#bodyHave, chunk.byteLength - offset);
      this.#body.set(chunk.subarray(offset, offset + take), this.#bodyHave);
      this.#bodyHave += take;
      offset += take;
      if (this.#bodyHave === this.#body.byteLength) {
        const message = this.#body;
        this.#body = undefined;
        this.#prefixHave = 0;
        onMessage(message);
      }
    }
  }
}
