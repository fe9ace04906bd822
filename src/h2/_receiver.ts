/**
 * What one HTTP/2 connection receives on its streams: DATA within the
 * receive windows (the connection's and each stream's, owned here, with the
 * WINDOW_UPDATEs that reopen them), and header blocks checked against RFC
 * 9113 section 8 before the layer above sees them. A stream's window is kept
 * on the stream (`recvWindow`, `recvUnacked`); only this type changes it.
 *
 * @module
 */

import type { StreamStore } from "./_stream_store.ts";
import type { ConnectionLimits, ConnectionOptions, ConnectionRole } from "./connection_options.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import type { FrameWriter } from "./frame_writer.ts";
import { FLAG, type FrameHeader, windowUpdateFrame } from "./frames.ts";
import { checkHeaderList, headerValue } from "./header_rules.ts";
import { type HeaderBlock, unpad } from "./header_block.ts";
import { INITIAL_SETTINGS } from "./settings.ts";
import type { Http2Stream } from "./stream.ts";

/** The receive side of one connection. */
export class Receiver {
  readonly #role: ConnectionRole;
  readonly #streamWindow: number;
  readonly #connectionWindow: number;
  /** What the peer may still send on the connection. */
  #window: number;
  /** DATA bytes received and not yet given back in a connection WINDOW_UPDATE. */
  #unacked = 0;

  /**
   * @param role Which side this is.
   * @param limits The windows this side grants (its SETTINGS and first WINDOW_UPDATE).
   */
  constructor(
    role: ConnectionRole,
    limits: Pick<ConnectionLimits, "streamWindow" | "connectionWindow">,
  ) {
    this.#role = role;
    this.#streamWindow = limits.streamWindow;
    this.#connectionWindow = limits.connectionWindow;
    this.#window = Math.max(INITIAL_SETTINGS.initialWindowSize, limits.connectionWindow);
  }

  /**
   * DATA: taken from both windows, checked, and handed to the stream's listener.
   *
   * @returns The stream when this frame ended the peer's side of it.
   * @throws {ConnectionError} Beyond the connection window, or on a stream not open.
   * @throws {StreamError} Beyond the stream's window, after its end, or past its content-length.
   */
  onData(
    h: FrameHeader,
    payload: Uint8Array,
    streams: StreamStore,
    writer: FrameWriter,
  ): Http2Stream | undefined {
    if (h.streamId === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "DATA on stream 0");
    const { data, padding } = unpad(h, payload);
    if (h.length > this.#window) {
      throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "DATA beyond the connection window");
    }
    this.#window -= h.length;
    this.#unacked += h.length;
    if (this.#unacked >= this.#connectionWindow / 2) {
      this.#window += this.#unacked;
      writer.queueControl(windowUpdateFrame(0, this.#unacked));
      this.#unacked = 0;
    }
    const stream = streams.get(h.streamId);
    if (stream === undefined) return streams.notOpen(h.streamId, "DATA");
    if (!stream.remoteOpen) {
      throw new StreamError(h.streamId, H2_ERROR.STREAM_CLOSED, "DATA after END_STREAM");
    }
    if (h.length > stream.recvWindow) {
      throw new StreamError(
        h.streamId,
        H2_ERROR.FLOW_CONTROL_ERROR,
        "DATA beyond the stream window",
      );
    }
    stream.recvWindow -= h.length;
    stream.dataReceived += data.byteLength;
    const endStream = (h.flags & FLAG.END_STREAM) !== 0;
    if (stream.contentLength !== undefined) {
      if (
        stream.dataReceived > stream.contentLength ||
        (endStream && stream.dataReceived !== stream.contentLength)
      ) {
        throw new StreamError(
          h.streamId,
          H2_ERROR.PROTOCOL_ERROR,
          "DATA does not match content-length",
        );
      }
    }
    if (endStream) stream.remoteEnded();
    // Padding is never seen by the layer above: give its window back now.
    if (padding > 0) this.release(stream, padding, writer);
    stream.listener.onData?.(data, endStream);
    return endStream ? stream : undefined;
  }

  /**
   * The layer above consumed `bytes` of a stream's DATA: once half the
   * stream's window is consumed, a WINDOW_UPDATE gives it back.
   */
  release(stream: Http2Stream, bytes: number, writer: FrameWriter): void {
    if (!stream.remoteOpen) return;
    const unacked = stream.recvUnacked + bytes;
    if (unacked >= this.#streamWindow / 2) {
      stream.recvUnacked = 0;
      stream.recvWindow += unacked;
      writer.queueControl(windowUpdateFrame(stream.id, unacked));
    } else {
      stream.recvUnacked = unacked;
    }
  }

  /**
   * A whole header block on an open stream: checked as request, response or
   * trailers, then handed to `onStream` (a request) or the stream's listener.
   *
   * @returns Whether it ended the peer's side of the stream.
   * @throws {StreamError} For a malformed or unexpected block.
   */
  onHeaderBlock(
    stream: Http2Stream,
    block: HeaderBlock,
    onStream: ConnectionOptions["onStream"],
  ): boolean {
    const { streamId: id, endStream, headers } = block;
    if (!stream.remoteOpen) {
      throw new StreamError(id, H2_ERROR.STREAM_CLOSED, "HEADERS after END_STREAM");
    }
    const informational = this.#role === "client" && stream.headerBlocks === 0 &&
      /^1\d\d$/.test(headerValue(headers, ":status") ?? "");
    if (informational) {
      if (endStream) throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "1xx with END_STREAM");
      return false;
    }
    stream.headerBlocks++;
    if (stream.headerBlocks > 2) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "a third header block");
    }
    const kind = stream.headerBlocks === 2
      ? "trailers"
      : this.#role === "server"
      ? "request"
      : "response";
    if (kind === "trailers" && !endStream) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "trailers without END_STREAM");
    }
    // An oversized request still opens its stream, so the server can say why
    // it refuses it; anything else oversized is refused here.
    if (block.oversizedBytes > 0 && kind !== "request") {
      throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "header list above the limit");
    }
    const problem = block.oversizedBytes > 0 ? undefined : checkHeaderList(headers, kind);
    if (problem !== undefined) throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, problem);
    if (kind !== "trailers") {
      const length = headerValue(headers, "content-length");
      if (length !== undefined) {
        if (!/^\d{1,15}$/.test(length)) {
          throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "content-length is not a number");
        }
        stream.contentLength = Number(length);
        if (endStream && stream.contentLength !== 0) {
          throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "content-length without DATA");
        }
      }
    } else if (stream.contentLength !== undefined && stream.dataReceived !== stream.contentLength) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "DATA does not match content-length");
    }
    if (endStream) stream.remoteEnded();
    if (kind === "request") onStream?.(stream, headers, endStream, block.oversizedBytes);
    else stream.listener.onHeaders?.(headers, endStream);
    return endStream;
  }
}
