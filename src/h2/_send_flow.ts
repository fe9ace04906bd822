/**
 * What this side may send (RFC 9113 section 6.9): the connection's send
 * window and each stream's, grown by the peer's WINDOW_UPDATE and
 * SETTINGS_INITIAL_WINDOW_SIZE, taken by the DATA the writer writes. A
 * stream's window is kept on the stream (`sendWindow`); only this type
 * changes it.
 *
 * @module
 */

import type { StreamStore } from "./_stream_store.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import { type FrameHeader, MAX_INT31, readUint31 } from "./frames.ts";
import { INITIAL_SETTINGS } from "./settings.ts";
import type { Http2Stream } from "./stream.ts";

/** The send windows of one connection. */
export class SendFlow {
  #connection: number = INITIAL_SETTINGS.initialWindowSize;

  /** DATA bytes the connection may still send (negative never: only streams' windows shrink). */
  get connectionWindow(): number {
    return this.#connection;
  }

  /** @returns DATA bytes `stream` may send now: the smaller of its window and the connection's. */
  available(stream: Http2Stream): number {
    return Math.min(stream.sendWindow, this.#connection);
  }

  /** `bytes` of DATA on `stream` went into a frame. */
  consume(stream: Http2Stream, bytes: number): void {
    stream.sendWindow -= bytes;
    this.#connection -= bytes;
  }

  /**
   * WINDOW_UPDATE, of the connection or of one stream: the window grows.
   *
   * @returns What may write more now: `"connection"` (every stream), a
   *   stream, or nothing (an update of a stream already closed).
   * @throws {ConnectionError} For a malformed update, one on an idle stream, or a connection window past 2^31-1.
   * @throws {StreamError} For a zero increment or a stream window past 2^31-1.
   */
  onWindowUpdate(
    h: FrameHeader,
    payload: Uint8Array,
    streams: StreamStore,
  ): "connection" | Http2Stream | undefined {
    if (h.length !== 4) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "WINDOW_UPDATE is not 4 bytes");
    }
    const increment = readUint31(payload, 0);
    if (h.streamId === 0) {
      if (increment === 0) {
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection");
      }
      if (this.#connection + increment > MAX_INT31) {
        throw new ConnectionError(
          H2_ERROR.FLOW_CONTROL_ERROR,
          "the connection window passed 2^31-1",
        );
      }
      this.#connection += increment;
      return "connection";
    }
    const stream = streams.get(h.streamId);
    if (stream === undefined) {
      if (streams.isIdle(h.streamId)) {
        throw new ConnectionError(
          H2_ERROR.PROTOCOL_ERROR,
          `WINDOW_UPDATE on idle stream ${h.streamId}`,
        );
      }
      return undefined;
    }
    if (increment === 0) {
      throw new StreamError(h.streamId, H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    }
    if (stream.sendWindow + increment > MAX_INT31) {
      throw new StreamError(
        h.streamId,
        H2_ERROR.FLOW_CONTROL_ERROR,
        "the stream window passed 2^31-1",
      );
    }
    stream.sendWindow += increment;
    return stream;
  }

  /**
   * The peer changed SETTINGS_INITIAL_WINDOW_SIZE: every open stream's
   * window moves by the difference (RFC 9113 section 6.9.2).
   *
   * @param delta The new initial size less the old; may be negative.
   * @throws {ConnectionError} When a window would pass 2^31-1.
   */
  initialWindowChanged(delta: number, streams: StreamStore): void {
    if (delta === 0) return;
    for (const stream of streams.values()) {
      if (stream.sendWindow + delta > MAX_INT31) {
        throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "a stream window passed 2^31-1");
      }
      stream.sendWindow += delta;
    }
  }
}
