/**
 * Header blocks as they arrive (RFC 9113 section 4.3): a HEADERS frame and
 * its CONTINUATION frames gathered within bounds, then decoded by the
 * connection's one HPACK decoder, in order. A bad block is a connection
 * error: the decoder's state would no longer match the peer's.
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";
import { ConnectionError, H2_ERROR } from "./errors.ts";
import { FLAG, type FrameHeader, readUint31 } from "./frames.ts";
import { type HeaderField, HpackDecoder, HpackError } from "./hpack.ts";

/** A whole header block, decoded. */
export interface HeaderBlock {
  readonly streamId: number;
  readonly endStream: boolean;
  /** The fields; only the first part when `oversizedBytes` > 0. */
  readonly headers: HeaderField[];
  /** The list's size when above the limit, else 0. */
  readonly oversizedBytes: number;
  /** The HEADERS frame made the stream depend on itself (a stream error). */
  readonly selfDependent: boolean;
}

/** Bounds on one header block. */
export interface HeaderBlockLimits {
  /** SETTINGS_MAX_HEADER_LIST_SIZE we advertised. */
  readonly maxHeaderListSize: number;
  /** Most CONTINUATION frames in one block. */
  readonly maxContinuationFrames: number;
  /** Most encoded bytes in one block. */
  readonly maxBlockBytes: number;
}

interface Pending {
  readonly streamId: number;
  readonly flags: number;
  readonly fragments: Uint8Array[];
  bytes: number;
  frames: number;
  readonly selfDependent: boolean;
}

/** Gathers and decodes the header blocks of one connection. */
export class HeaderBlockReader {
  readonly #limits: HeaderBlockLimits;
  readonly #decoder = new HpackDecoder();
  #pending: Pending | undefined;

  /** @param limits Size and frame bounds. */
  constructor(limits: HeaderBlockLimits) {
    this.#limits = limits;
  }

  /** Whether a block waits for CONTINUATION (no other frame may come between). */
  get open(): boolean {
    return this.#pending !== undefined;
  }

  /**
   * @param h A HEADERS frame's header (stream id checked by the caller).
   * @param payload Its payload.
   * @returns The block when the frame ends it.
   * @throws {ConnectionError} For bad padding or priority, or a bad block.
   */
  headers(h: FrameHeader, payload: Uint8Array): HeaderBlock | undefined {
    let data = unpad(h, payload).data;
    let selfDependent = false;
    if (h.flags & FLAG.PRIORITY) {
      if (data.byteLength < 5) {
        throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "HEADERS too short for its priority");
      }
      selfDependent = readUint31(data, 0) === h.streamId;
      data = data.subarray(5);
    }
    // A block in one frame is decoded where it lies; only one that waits
    // for CONTINUATION is copied out of the read buffer.
    const whole = (h.flags & FLAG.END_HEADERS) !== 0;
    const pending: Pending = {
      streamId: h.streamId,
      flags: h.flags,
      fragments: [whole ? data : data.slice()],
      bytes: data.byteLength,
      frames: 0,
      selfDependent,
    };
    if (whole) return this.#decode(pending);
    this.#pending = pending;
    return undefined;
  }

  /**
   * @param h A CONTINUATION frame's header.
   * @param payload Its payload.
   * @returns The block when the frame ends it.
   * @throws {ConnectionError} PROTOCOL_ERROR without a block on that stream,
   *   ENHANCE_YOUR_CALM past the bounds, COMPRESSION_ERROR for a bad block.
   */
  continuation(h: FrameHeader, payload: Uint8Array): HeaderBlock | undefined {
    const pending = this.#pending;
    if (pending === undefined || pending.streamId !== h.streamId) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "CONTINUATION without a header block");
    }
    pending.frames++;
    pending.bytes += payload.byteLength;
    if (
      pending.frames > this.#limits.maxContinuationFrames ||
      pending.bytes > this.#limits.maxBlockBytes
    ) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "header block too long");
    }
    pending.fragments.push(payload.slice());
    if (!(h.flags & FLAG.END_HEADERS)) return undefined;
    this.#pending = undefined;
    return this.#decode(pending);
  }

  #decode(pending: Pending): HeaderBlock {
    const bytes = pending.fragments.length === 1
      ? pending.fragments[0]!
      : concatBytes(pending.fragments);
    try {
      const decoded = this.#decoder.decode(bytes, this.#limits.maxHeaderListSize);
      return {
        streamId: pending.streamId,
        endStream: (pending.flags & FLAG.END_STREAM) !== 0,
        headers: decoded.headers,
        oversizedBytes: decoded.oversized ? decoded.listSize : 0,
        selfDependent: pending.selfDependent,
      };
    } catch (err) {
      if (err instanceof HpackError) {
        throw new ConnectionError(H2_ERROR.COMPRESSION_ERROR, err.message);
      }
      throw err;
    }
  }
}

/**
 * Strips padding (RFC 9113 section 6.1) from a DATA or HEADERS payload.
 *
 * @param h The frame header.
 * @param payload The payload.
 * @returns The data and how many bytes the padding took (pad length byte included).
 * @throws {ConnectionError} When the padding is as long as the frame.
 */
export function unpad(h: FrameHeader, payload: Uint8Array): { data: Uint8Array; padding: number } {
  if (!(h.flags & FLAG.PADDED)) return { data: payload, padding: 0 };
  if (payload.byteLength < 1) {
    throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "padded frame without a pad length");
  }
  const padLength = payload[0]!;
  if (padLength >= payload.byteLength) {
    throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "padding as long as the frame");
  }
  return { data: payload.subarray(1, payload.byteLength - padLength), padding: padLength + 1 };
}
