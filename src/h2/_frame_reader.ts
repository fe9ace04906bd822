/**
 * The reading side of an HTTP/2 connection: the client preface, frame
 * headers and sizes, and every frame of a stream (DATA, HEADERS and
 * CONTINUATION, PRIORITY, RST_STREAM) checked against RFC 9113 and handed
 * on; connection-level frames go to {@linkcode ControlFrames}. What may be
 * received (the receive window) and the highest stream the peer opened are
 * kept here; the connection owns the stream table and every write.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { TokenBucket } from "../ratelimit/mod.ts";
import type { ControlFrames } from "./_control_frames.ts";
import type { ReadonlyStreamTable } from "./_stream_table.ts";
import type { ConnectionLimits, ConnectionRole } from "./connection_options.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import {
  CLIENT_PREFACE,
  FLAG,
  FRAME_HEADER_BYTES,
  FRAME_TYPE,
  type FrameHeader,
  readFrameHeader,
  readUint31,
  readUint32,
  windowUpdateFrame,
} from "./frames.ts";
import { checkHeaderList, headerValue } from "./header_rules.ts";
import { type HeaderBlock, HeaderBlockReader, unpad } from "./header_block.ts";
import type { HeaderField } from "./hpack.ts";
import { INITIAL_SETTINGS, type Settings } from "./settings.ts";
import type { Http2Stream } from "./stream.ts";

/** Our SETTINGS_MAX_FRAME_SIZE: the protocol's initial value, which every reader must take. */
export const OUR_MAX_FRAME_SIZE = INITIAL_SETTINGS.maxFrameSize;

/** What the frame reader reads and acts on in its connection. */
export interface FrameReaderHost {
  readonly role: ConnectionRole;
  readonly limits: ConnectionLimits;
  /** The peer's settings (its initial stream window). */
  readonly peer: Settings;
  /** The open streams. */
  readonly streams: ReadonlyStreamTable<Http2Stream>;
  /** Streams this side reset lately: their late frames are ignored. */
  readonly resetByUs: ReadonlySet<number>;
  /** The connection-level frames. */
  readonly control: ControlFrames;
  /** @returns The next stream ID this side would open. */
  nextLocalStreamId(): number;
  /** @returns Whether this side has sent GOAWAY. */
  goawaySent(): boolean;
  /** @returns The last stream ID our GOAWAY accepts. */
  goawayLastId(): number;
  /** @returns Whether the connection is closing (reading stops). */
  closing(): boolean;
  /** Opens a stream the peer started, in the stream table. */
  openPeerStream(id: number): Http2Stream;
  /** Server side: a peer opened a stream with these request headers. */
  onStream(stream: Http2Stream, fields: HeaderField[], endStream: boolean, oversized: number): void;
  /** Gives a stream's window back for bytes the layer above will never see. */
  released(stream: Http2Stream, bytes: number): void;
  /** The peer ended its side of a stream. */
  afterRemoteEnd(stream: Http2Stream): void;
  /** Ends a stream the peer reset. */
  forget(stream: Http2Stream, code: number | undefined): void;
  /** Queues a connection-level frame. */
  queueControl(frame: Uint8Array): void;
  /** Resets one stream for a protocol error (reported to the observer first). */
  streamError(code: number, message: string): void;
  resetById(streamId: number, code: number): void;
  /** Ends the connection with GOAWAY and `code`. */
  fail(code: number, message: string): void;
  /** Code inside the connection threw. */
  internalFailure(err: unknown): void;
}

/** Reads and checks the frames of one connection. */
export class FrameReader {
  readonly #host: FrameReaderHost;
  readonly #control: ControlFrames;
  readonly #headerBlocks: HeaderBlockReader;
  readonly #resetBucket: TokenBucket;
  #prefaceSeen: boolean;
  #recvWindow: number;
  #recvUnacked = 0;
  #lastPeerStreamId = 0;

  /**
   * @param host The connection.
   * @param clock Refills the reset rate limit.
   */
  constructor(host: FrameReaderHost, clock: Clock) {
    this.#host = host;
    this.#control = host.control;
    const limits = host.limits;
    this.#headerBlocks = new HeaderBlockReader({
      maxHeaderListSize: limits.maxHeaderListSize,
      maxContinuationFrames: limits.maxContinuationFrames,
      maxBlockBytes: limits.maxHeaderListSize * 2 + OUR_MAX_FRAME_SIZE,
    });
    this.#resetBucket = new TokenBucket({ ...limits.resetRate, clock });
    this.#prefaceSeen = host.role === "client";
    this.#recvWindow = Math.max(INITIAL_SETTINGS.initialWindowSize, limits.connectionWindow);
  }

  /** The highest stream ID the peer has opened. */
  get lastPeerStreamId(): number {
    return this.#lastPeerStreamId;
  }

  /**
   * Parses and handles every whole frame in `buf[start, end)`.
   *
   * @param buf The read buffer.
   * @param start Where unparsed bytes begin.
   * @param end Where they end.
   * @returns Where the first incomplete frame begins (`end` after a failure).
   */
  parse(buf: Uint8Array, start: number, end: number): number {
    if (!this.#prefaceSeen) {
      const have = Math.min(end - start, CLIENT_PREFACE.byteLength);
      for (let i = 0; i < have; i++) {
        if (buf[start + i] !== CLIENT_PREFACE[i]) {
          this.#host.fail(
            H2_ERROR.PROTOCOL_ERROR,
            "the connection did not start with the HTTP/2 preface",
          );
          return end;
        }
      }
      if (have < CLIENT_PREFACE.byteLength) return start;
      start += CLIENT_PREFACE.byteLength;
      this.#prefaceSeen = true;
    }
    while (end - start >= FRAME_HEADER_BYTES && !this.#host.closing()) {
      const header = readFrameHeader(buf, start);
      if (header.length > OUR_MAX_FRAME_SIZE) {
        this.#host.fail(
          H2_ERROR.FRAME_SIZE_ERROR,
          `frame of ${header.length} bytes is above SETTINGS_MAX_FRAME_SIZE`,
        );
        return end;
      }
      const frameEnd = start + FRAME_HEADER_BYTES + header.length;
      if (frameEnd > end) break;
      const payload = buf.subarray(start + FRAME_HEADER_BYTES, frameEnd);
      start = frameEnd;
      try {
        this.#frame(header, payload);
      } catch (err) {
        if (err instanceof StreamError) {
          this.#host.streamError(err.code, err.message);
          this.#host.resetById(err.streamId, err.code);
        } else if (err instanceof ConnectionError) {
          this.#host.fail(err.code, err.message);
          return end;
        } else {
          this.#host.internalFailure(err);
          return end;
        }
      }
    }
    return start;
  }

  #frame(h: FrameHeader, payload: Uint8Array): void {
    if (!this.#control.settingsSeen && h.type !== FRAME_TYPE.SETTINGS) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "the first frame was not SETTINGS");
    }
    if (this.#headerBlocks.open && h.type !== FRAME_TYPE.CONTINUATION) {
      throw new ConnectionError(
        H2_ERROR.PROTOCOL_ERROR,
        "a header block was interrupted by another frame",
      );
    }
    switch (h.type) {
      case FRAME_TYPE.DATA:
        return this.#onData(h, payload);
      case FRAME_TYPE.HEADERS:
        return this.#onHeaders(h, payload);
      case FRAME_TYPE.PRIORITY:
        return this.#onPriority(h, payload);
      case FRAME_TYPE.RST_STREAM:
        return this.#onRstStream(h, payload);
      case FRAME_TYPE.SETTINGS:
        return this.#control.onSettings(h, payload);
      case FRAME_TYPE.PUSH_PROMISE:
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PUSH_PROMISE was not enabled");
      case FRAME_TYPE.PING:
        return this.#control.onPing(h, payload);
      case FRAME_TYPE.GOAWAY:
        return this.#control.onGoaway(h, payload);
      case FRAME_TYPE.WINDOW_UPDATE:
        return this.#control.onWindowUpdate(h, payload);
      case FRAME_TYPE.CONTINUATION:
        return this.#onContinuation(h, payload);
      default:
        // Unknown frame types are ignored (RFC 9113 section 4.1).
        return;
    }
  }

  /**
   * @param streamId A stream ID.
   * @returns Whether no stream of that ID has been opened yet.
   */
  isIdle(streamId: number): boolean {
    const peerInitiated = (streamId % 2 === 1) === (this.#host.role === "server");
    return peerInitiated
      ? streamId > this.#lastPeerStreamId
      : streamId >= this.#host.nextLocalStreamId();
  }

  /** A stream that is not open: idle is a connection error, closed depends on who closed it. */
  #notOpen(streamId: number, what: string): undefined {
    if (this.isIdle(streamId)) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `${what} on idle stream ${streamId}`);
    }
    if (this.#host.resetByUs.has(streamId)) return undefined;
    throw new ConnectionError(H2_ERROR.STREAM_CLOSED, `${what} on closed stream ${streamId}`);
  }

  #onData(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "DATA on stream 0");
    const { data, padding } = unpad(h, payload);
    if (h.length > this.#recvWindow) {
      throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "DATA beyond the connection window");
    }
    this.#recvWindow -= h.length;
    this.#connectionReceived(h.length);
    const stream = this.#host.streams.get(h.streamId);
    if (stream === undefined) return this.#notOpen(h.streamId, "DATA");
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
    if (padding > 0) this.#host.released(stream, padding);
    stream.listener.onData?.(data, endStream);
    if (endStream) this.#host.afterRemoteEnd(stream);
  }

  #connectionReceived(bytes: number): void {
    this.#recvUnacked += bytes;
    if (this.#recvUnacked >= this.#host.limits.connectionWindow / 2) {
      this.#recvWindow += this.#recvUnacked;
      this.#host.queueControl(windowUpdateFrame(0, this.#recvUnacked));
      this.#recvUnacked = 0;
    }
  }

  #onHeaders(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId === 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "HEADERS on stream 0");
    const block = this.#headerBlocks.headers(h, payload);
    if (block !== undefined) this.#headerBlockDone(block);
  }

  #onContinuation(h: FrameHeader, payload: Uint8Array): void {
    const block = this.#headerBlocks.continuation(h, payload);
    if (block !== undefined) this.#headerBlockDone(block);
  }

  #headerBlockDone(block: HeaderBlock): void {
    const id = block.streamId;
    const { endStream, headers } = block;
    let stream = this.#host.streams.get(id);
    if (stream === undefined) {
      if (this.#host.role === "client" || id % 2 === 0) {
        if (!this.isIdle(id) && this.#host.resetByUs.has(id)) return;
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `HEADERS opening stream ${id}`);
      }
      if (id <= this.#lastPeerStreamId) return this.#notOpen(id, "HEADERS");
      this.#lastPeerStreamId = id;
      if (block.selfDependent) {
        throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
      }
      if (this.#host.goawaySent() && id > this.#host.goawayLastId()) {
        throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "the server is going away");
      }
      if (this.#host.streams.size >= this.#host.limits.maxConcurrentStreams) {
        throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "too many concurrent streams");
      }
      stream = this.#host.openPeerStream(id);
    } else if (block.selfDependent) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
    }
    if (!stream.remoteOpen) {
      throw new StreamError(id, H2_ERROR.STREAM_CLOSED, "HEADERS after END_STREAM");
    }
    const informational = this.#host.role === "client" && stream.headerBlocks === 0 &&
      /^1\d\d$/.test(headerValue(headers, ":status") ?? "");
    if (informational) {
      if (endStream) throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "1xx with END_STREAM");
      return;
    }
    stream.headerBlocks++;
    if (stream.headerBlocks > 2) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "a third header block");
    }
    const kind = stream.headerBlocks === 2
      ? "trailers"
      : this.#host.role === "server"
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
    if (stream.headerBlocks === 1 && this.#host.role === "server") {
      this.#host.onStream(
        stream,
        headers,
        endStream,
        block.oversizedBytes,
      );
    } else {
      stream.listener.onHeaders?.(headers, endStream);
    }
    if (endStream) this.#host.afterRemoteEnd(stream);
  }

  #onPriority(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId === 0) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PRIORITY on stream 0");
    }
    if (h.length !== 5) {
      throw new StreamError(h.streamId, H2_ERROR.FRAME_SIZE_ERROR, "PRIORITY is not 5 bytes");
    }
    if (readUint31(payload, 0) === h.streamId) {
      throw new StreamError(h.streamId, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
    }
  }

  #onRstStream(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId === 0) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "RST_STREAM on stream 0");
    }
    if (h.length !== 4) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "RST_STREAM is not 4 bytes");
    }
    const stream = this.#host.streams.get(h.streamId);
    if (stream === undefined) {
      if (this.isIdle(h.streamId)) {
        throw new ConnectionError(
          H2_ERROR.PROTOCOL_ERROR,
          `RST_STREAM on idle stream ${h.streamId}`,
        );
      }
      return;
    }
    if (!this.#resetBucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many stream resets");
    }
    this.#host.forget(stream, readUint32(payload, 0));
  }
}
