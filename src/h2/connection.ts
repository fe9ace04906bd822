/**
 * One HTTP/2 connection over a Deno socket (RFC 9113), either side: the
 * preface and SETTINGS exchange, frame parsing and checks, the stream table,
 * flow control both ways, PING, RST_STREAM, GOAWAY (two-phase on shutdown),
 * and the limits that keep a hostile peer from costing more than its own
 * connection. Nothing here knows gRPC.
 *
 * Reads are parsed synchronously out of one reused buffer; writes are
 * gathered into one reused buffer and written by a single loop, so a slow
 * reader holds back only its own connection.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { TokenBucket } from "../ratelimit/mod.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import { FlowWindow } from "./flow_window.ts";
import {
  CLIENT_PREFACE,
  FLAG,
  FRAME_HEADER_BYTES,
  FRAME_TYPE,
  type FrameHeader,
  goawayFrame,
  MAX_INT31,
  pingFrame,
  readFrameHeader,
  readUint31,
  readUint32,
  rstStreamFrame,
  SETTINGS_ACK,
  settingsFrame,
  windowUpdateFrame,
} from "./frames.ts";
import { checkHeaderList, headerValue } from "./header_rules.ts";
import { type HeaderBlock, HeaderBlockReader, unpad } from "./header_block.ts";
import { type HeaderField, HpackEncoder } from "./hpack.ts";
import { applySettings, INITIAL_SETTINGS, SETTING, type Settings } from "./settings.ts";
import { FrameWriter } from "./frame_writer.ts";
import { Http2Stream, type StreamHost } from "./stream.ts";
import { bytesEqual } from "../bytes_equal.ts";

/** Which end of the connection this is. */
export type ConnectionRole = "server" | "client";

/** Bounds on what a peer may make this side hold or do. */
export interface ConnectionLimits {
  /** Streams the peer may have open at once (our SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send per stream unread. */
  streamWindow: number;
  /** What the peer may send on the whole connection unread. */
  connectionWindow: number;
  /** Our SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 accounting: name + value + 32). */
  maxHeaderListSize: number;
  /** Most CONTINUATION frames in one header block. */
  maxContinuationFrames: number;
  /** Time to receive the preface and first SETTINGS, ms. */
  handshakeTimeoutMs: number;
  /** A connection with no stream for this long is closed gracefully, ms; 0 never. */
  idleTimeoutMs: number;
  /** With streams open and nothing received for this long, PING the peer, ms; 0 never. */
  keepaliveMs: number;
  /** A PING unanswered this long ends the connection, ms. */
  keepaliveTimeoutMs: number;
  /** PING and SETTINGS frames a peer may send: per second, and in a burst. */
  controlRate: { qps: number; burst: number };
  /** Streams a peer may reset (RST_STREAM): per second, and in a burst ("rapid reset"). */
  resetRate: { qps: number; burst: number };
  /** Frames this side may have queued for a peer that does not read, bytes. */
  maxControlBacklog: number;
}

/** Defaults sized for a node-local API socket. */
export const DEFAULT_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  maxConcurrentStreams: 1100,
  streamWindow: 1 << 20,
  connectionWindow: 16 << 20,
  maxHeaderListSize: 16 << 10,
  maxContinuationFrames: 32,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 0,
  keepaliveMs: 0,
  keepaliveTimeoutMs: 20_000,
  controlRate: { qps: 1000, burst: 2000 },
  resetRate: { qps: 200, burst: 1000 },
  maxControlBacklog: 1 << 20,
});

/** What a connection reports about its peer's misbehaviour and its own failures. */
export interface ConnectionObserver {
  /** This side ended the connection with GOAWAY and an error code. */
  connectionError?(code: number, message: string): void;
  /** This side reset one stream for a protocol error. */
  streamError?(code: number, message: string): void;
  /** Code above or inside the connection threw; the connection was closed. */
  internalError?(error: unknown): void;
}

/** Options of {@linkcode Http2Connection}. */
export interface ConnectionOptions {
  role: ConnectionRole;
  limits?: Partial<ConnectionLimits>;
  /**
   * Server side: a peer opened a stream with these request headers (already
   * checked). Set `stream.listener` to hear the rest. When the list was
   * above `maxHeaderListSize`, `oversizedBytes` is its size and `fields` only
   * its first part (unchecked): refuse the request.
   */
  onStream?(
    stream: Http2Stream,
    fields: HeaderField[],
    endStream: boolean,
    oversizedBytes: number,
  ): void;
  observer?: ConnectionObserver;
  clock?: Clock;
}

/** The error a client sees when it asks a closed or closing connection for a stream. */
export class ConnectionClosedError extends Error {
  /**
   * @param message Why no stream can be opened.
   */
  constructor(message: string) {
    super(message);
    this.name = "ConnectionClosedError";
  }
}

const READ_BUFFER_BYTES = 64 * 1024;
/** Our SETTINGS_MAX_FRAME_SIZE: the protocol's initial value, which every reader must take. */
const OUR_MAX_FRAME_SIZE = INITIAL_SETTINGS.maxFrameSize;
/** Streams this side reset whose late frames are ignored, not treated as errors. */
const RESET_MEMORY = 1024;
const SHUTDOWN_PING = new Uint8Array([0x73, 0x68, 0x75, 0x74, 0x64, 0x6f, 0x77, 0x6e]);
const KEEPALIVE_PING = new Uint8Array([0x6b, 0x65, 0x65, 0x70, 0x61, 0x6c, 0x69, 0x76]);

/** An HTTP/2 connection. */
export class Http2Connection implements StreamHost {
  readonly role: ConnectionRole;
  readonly #conn: Deno.Conn;
  readonly #limits: ConnectionLimits;
  readonly #options: ConnectionOptions;
  readonly #clock: Clock;
  readonly #streams = new Map<number, Http2Stream>();
  readonly #resetByUs = new Set<number>();
  readonly #headerBlocks: HeaderBlockReader;
  readonly #peer: Settings = { ...INITIAL_SETTINGS };
  readonly #encoder = new HpackEncoder();
  readonly #writer: FrameWriter;
  readonly #sendWindow = new FlowWindow(INITIAL_SETTINGS.initialWindowSize);
  #recvWindow = INITIAL_SETTINGS.initialWindowSize;
  #recvUnacked = 0;
  readonly #streamUnacked = new Map<number, number>();
  #prefaceSeen: boolean;
  #settingsSeen = false;
  #lastPeerStreamId = 0;
  #nextLocalStreamId: number;
  #goawaySent = false;
  #goawayLastId = MAX_INT31;
  #goawayReceived = false;
  #closed = false;
  #closing = false;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #shutdownTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #startedAt: number;
  #lastActivity: number;
  #idleSince: number;
  #pingSentAt: number | undefined;
  #shutdownPingPending = false;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #controlBucket: TokenBucket;
  readonly #resetBucket: TokenBucket;

  /**
   * Starts speaking HTTP/2 on `conn`: the client sends its preface at once;
   * both sides send SETTINGS. Call {@linkcode Http2Connection.run} to read.
   *
   * @param conn An accepted or connected socket.
   * @param options Role, limits, the server's stream callback, observer, clock.
   */
  constructor(conn: Deno.Conn, options: ConnectionOptions) {
    this.role = options.role;
    this.#conn = conn;
    this.#options = options;
    this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#clock = options.clock ?? systemClock;
    this.#headerBlocks = new HeaderBlockReader({
      maxHeaderListSize: this.#limits.maxHeaderListSize,
      maxContinuationFrames: this.#limits.maxContinuationFrames,
      maxBlockBytes: this.#limits.maxHeaderListSize * 2 + OUR_MAX_FRAME_SIZE,
    });
    this.#prefaceSeen = this.role === "client";
    this.#nextLocalStreamId = this.role === "client" ? 1 : 2;
    this.#startedAt = this.#lastActivity = this.#idleSince = this.#clock.now();
    this.#controlBucket = new TokenBucket({ ...this.#limits.controlRate, clock: this.#clock });
    this.#resetBucket = new TokenBucket({ ...this.#limits.resetRate, clock: this.#clock });
    this.#done = new Promise((resolve) => this.#resolveDone = resolve);
    this.#writer = new FrameWriter(conn, this.#encoder, {
      peerMaxFrameSize: () => this.#peer.maxFrameSize,
      sendWindow: this.#sendWindow,
      owns: (stream) => this.#streams.get(stream.id) === stream,
      localEnded: (stream) => this.#localEnded(stream),
      writeFailed: () => this.#terminate(H2_ERROR.CANCEL),
    });
    if (this.role === "client") this.#queueControl(CLIENT_PREFACE);
    const settings: [number, number][] = [
      [SETTING.MAX_CONCURRENT_STREAMS, this.#limits.maxConcurrentStreams],
      [SETTING.INITIAL_WINDOW_SIZE, this.#limits.streamWindow],
      [SETTING.MAX_HEADER_LIST_SIZE, this.#limits.maxHeaderListSize],
    ];
    if (this.role === "client") settings.unshift([SETTING.ENABLE_PUSH, 0]);
    this.#queueControl(settingsFrame(settings));
    const extra = this.#limits.connectionWindow - INITIAL_SETTINGS.initialWindowSize;
    if (extra > 0) {
      this.#queueControl(windowUpdateFrame(0, extra));
      this.#recvWindow += extra;
    }
    this.#armTimer();
  }

  /** Resolves once the connection is closed and its socket released. */
  get done(): Promise<void> {
    return this.#done;
  }

  /** Whether the connection is closed or closing. */
  get closed(): boolean {
    return this.#closed || this.#closing;
  }

  /** Whether new streams may be opened on it (client side). */
  get usable(): boolean {
    return !this.closed && !this.#goawayReceived && !this.#goawaySent &&
      this.#nextLocalStreamId <= MAX_INT31;
  }

  /** Streams open now. */
  get streamCount(): number {
    return this.#streams.size;
  }

  /**
   * Reads and handles frames until the peer leaves or the connection fails.
   * Never rejects: every failure closes this connection and is reported to
   * the observer.
   *
   * @returns Resolves when the connection is closed.
   */
  async run(): Promise<void> {
    const buf = new Uint8Array(READ_BUFFER_BYTES);
    let start = 0;
    let end = 0;
    try {
      for (;;) {
        if (end === buf.byteLength) {
          buf.copyWithin(0, start, end);
          end -= start;
          start = 0;
        }
        let n: number | null;
        try {
          n = await this.#conn.read(buf.subarray(end));
        } catch {
          n = null;
        }
        if (n === null || this.#closed) break;
        end += n;
        this.#lastActivity = this.#clock.now();
        start = this.#parse(buf, start, end);
        if (start === end) start = end = 0;
        if (this.#closing || this.#closed) break;
      }
    } catch (err) {
      this.#internalFailure(err);
    }
    if (!this.#closing) this.#terminate(H2_ERROR.CANCEL);
    await this.#done;
  }

  /**
   * Client side: opens a stream and queues its request headers.
   *
   * @param fields Request headers, pseudo-headers first.
   * @param endStream Whether the request has no body.
   * @returns The stream.
   * @throws {ConnectionClosedError} When the connection cannot take new streams.
   */
  request(fields: readonly HeaderField[], endStream: boolean): Http2Stream {
    if (!this.usable) throw new ConnectionClosedError("the connection is closed or going away");
    if (this.#streams.size >= this.#peer.maxConcurrentStreams) {
      throw new ConnectionClosedError(
        `the peer allows ${this.#peer.maxConcurrentStreams} concurrent streams`,
      );
    }
    const id = this.#nextLocalStreamId;
    this.#nextLocalStreamId += 2;
    const stream = new Http2Stream(
      id,
      this,
      this.#peer.initialWindowSize,
      this.#limits.streamWindow,
    );
    this.#streams.set(id, stream);
    this.#idleSince = Infinity;
    stream.sendHeaders({ fields }, endStream);
    return stream;
  }

  /**
   * Graceful shutdown (RFC 9113 section 6.8): a GOAWAY that refuses nothing
   * yet and a PING; once the PING returns (or after a second), a GOAWAY
   * naming the last stream accepted. The connection closes when its streams
   * are done, or after `graceMs`.
   *
   * @param graceMs Longest wait for open streams.
   * @returns Resolves when the connection is closed.
   */
  shutdown(graceMs: number): Promise<void> {
    if (this.#closed || this.#closing) return this.#done;
    if (!this.#goawaySent) {
      this.#goawaySent = true;
      this.#queueControl(goawayFrame(MAX_INT31, H2_ERROR.NO_ERROR));
      this.#queueControl(pingFrame(SHUTDOWN_PING, false));
      this.#shutdownPingPending = true;
      this.#shutdownTimer = setTimeout(() => this.#finalGoaway(), Math.min(1000, graceMs));
      this.#graceTimer = setTimeout(
        () => this.#fail(H2_ERROR.NO_ERROR, "shutdown grace period over"),
        graceMs,
      );
    }
    this.#closeIfDrained();
    return this.#done;
  }

  /**
   * Closes at once: every open stream ends with CANCEL and the socket closes.
   *
   * @param code The GOAWAY code to send first.
   * @param message Debug text.
   * @returns Resolves when closed.
   */
  close(code: number = H2_ERROR.NO_ERROR, message = ""): Promise<void> {
    if (!this.#closed && !this.#closing) this.#fail(code, message);
    return this.#done;
  }

  // --- StreamHost -------------------------------------------------------

  /** @param stream A stream with frames to write. */
  schedule(stream: Http2Stream): void {
    if (this.#closed || this.#closing) return;
    this.#writer.schedule(stream);
  }

  /**
   * @param stream The stream to reset.
   * @param code The RST_STREAM code.
   */
  resetStream(stream: Http2Stream, code: number): void {
    if (this.#streams.get(stream.id) !== stream) return;
    // A stream this side opened but whose HEADERS never went out is idle for
    // the peer: RST_STREAM there is a protocol error (RFC 9113 section 5.1).
    // Dropping it is enough; the next stream's higher id closes it.
    const known = stream.headersWritten || (stream.id % 2 === 1) !== (this.role === "client");
    if (known) {
      this.#queueControl(rstStreamFrame(stream.id, code));
      this.#rememberReset(stream.id);
    }
    this.#forget(stream, code);
  }

  /**
   * @param stream The stream whose DATA was consumed.
   * @param bytes How much.
   */
  released(stream: Http2Stream, bytes: number): void {
    if (!stream.remoteOpen) return;
    const unacked = (this.#streamUnacked.get(stream.id) ?? 0) + bytes;
    if (unacked >= this.#limits.streamWindow / 2) {
      this.#streamUnacked.delete(stream.id);
      stream.recvWindow += unacked;
      this.#queueControl(windowUpdateFrame(stream.id, unacked));
    } else {
      this.#streamUnacked.set(stream.id, unacked);
    }
  }

  // --- reading ----------------------------------------------------------

  #parse(buf: Uint8Array, start: number, end: number): number {
    if (!this.#prefaceSeen) {
      const have = Math.min(end - start, CLIENT_PREFACE.byteLength);
      for (let i = 0; i < have; i++) {
        if (buf[start + i] !== CLIENT_PREFACE[i]) {
          this.#fail(
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
    while (end - start >= FRAME_HEADER_BYTES && !this.#closing) {
      const header = readFrameHeader(buf, start);
      if (header.length > OUR_MAX_FRAME_SIZE) {
        this.#fail(
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
          this.#options.observer?.streamError?.(err.code, err.message);
          this.#resetById(err.streamId, err.code);
        } else if (err instanceof ConnectionError) {
          this.#fail(err.code, err.message);
          return end;
        } else {
          this.#internalFailure(err);
          return end;
        }
      }
    }
    return start;
  }

  #frame(h: FrameHeader, payload: Uint8Array): void {
    if (!this.#settingsSeen && h.type !== FRAME_TYPE.SETTINGS) {
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
        return this.#onSettings(h, payload);
      case FRAME_TYPE.PUSH_PROMISE:
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PUSH_PROMISE was not enabled");
      case FRAME_TYPE.PING:
        return this.#onPing(h, payload);
      case FRAME_TYPE.GOAWAY:
        return this.#onGoaway(h, payload);
      case FRAME_TYPE.WINDOW_UPDATE:
        return this.#onWindowUpdate(h, payload);
      case FRAME_TYPE.CONTINUATION:
        return this.#onContinuation(h, payload);
      default:
        // Unknown frame types are ignored (RFC 9113 section 4.1).
        return;
    }
  }

  #isIdle(streamId: number): boolean {
    const peerInitiated = (streamId % 2 === 1) === (this.role === "server");
    return peerInitiated ? streamId > this.#lastPeerStreamId : streamId >= this.#nextLocalStreamId;
  }

  /** A stream that is not open: idle is a connection error, closed depends on who closed it. */
  #notOpen(streamId: number, what: string): undefined {
    if (this.#isIdle(streamId)) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `${what} on idle stream ${streamId}`);
    }
    if (this.#resetByUs.has(streamId)) return undefined;
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
    const stream = this.#streams.get(h.streamId);
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
    if (padding > 0) this.released(stream, padding);
    stream.listener.onData?.(data, endStream);
    if (endStream) this.#afterRemoteEnd(stream);
  }

  #connectionReceived(bytes: number): void {
    this.#recvUnacked += bytes;
    if (this.#recvUnacked >= this.#limits.connectionWindow / 2) {
      this.#recvWindow += this.#recvUnacked;
      this.#queueControl(windowUpdateFrame(0, this.#recvUnacked));
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
    let stream = this.#streams.get(id);
    if (stream === undefined) {
      if (this.role === "client" || id % 2 === 0) {
        if (!this.#isIdle(id) && this.#resetByUs.has(id)) return;
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `HEADERS opening stream ${id}`);
      }
      if (id <= this.#lastPeerStreamId) return this.#notOpen(id, "HEADERS");
      this.#lastPeerStreamId = id;
      if (block.selfDependent) {
        throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
      }
      if (this.#goawaySent && id > this.#goawayLastId) {
        throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "the server is going away");
      }
      if (this.#streams.size >= this.#limits.maxConcurrentStreams) {
        throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "too many concurrent streams");
      }
      stream = new Http2Stream(id, this, this.#peer.initialWindowSize, this.#limits.streamWindow);
      this.#streams.set(id, stream);
      this.#idleSince = Infinity;
    } else if (block.selfDependent) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
    }
    if (!stream.remoteOpen) {
      throw new StreamError(id, H2_ERROR.STREAM_CLOSED, "HEADERS after END_STREAM");
    }
    const informational = this.role === "client" && stream.headerBlocks === 0 &&
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
      : this.role === "server"
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
    if (stream.headerBlocks === 1 && this.role === "server") {
      this.#options.onStream?.(
        stream,
        headers,
        endStream,
        block.oversizedBytes,
      );
    } else {
      stream.listener.onHeaders?.(headers, endStream);
    }
    if (endStream) this.#afterRemoteEnd(stream);
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
    const stream = this.#streams.get(h.streamId);
    if (stream === undefined) {
      if (this.#isIdle(h.streamId)) {
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
    this.#forget(stream, readUint32(payload, 0));
  }

  #onSettings(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "SETTINGS on a stream");
    }
    if (h.flags & FLAG.ACK) {
      if (h.length !== 0) {
        throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      }
      return;
    }
    if (h.length % 6 !== 0) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6");
    }
    if (this.#settingsSeen && !this.#controlBucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many SETTINGS frames");
    }
    this.#settingsSeen = true;
    const delta = applySettings(this.#peer, payload);
    if (delta !== 0) {
      for (const stream of this.#streams.values()) {
        if (!stream.sendWindow.grow(delta)) {
          throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "a stream window passed 2^31-1");
        }
        if (delta > 0 && stream.peek() !== undefined) this.#writer.schedule(stream);
      }
    }
    this.#encoder.setMaxTableSize(Math.min(this.#peer.headerTableSize, 4096));
    this.#queueControl(SETTINGS_ACK);
    this.#kick();
  }

  #onPing(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PING on a stream");
    if (h.length !== 8) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "PING is not 8 bytes");
    if (h.flags & FLAG.ACK) {
      if (bytesEqual(payload, SHUTDOWN_PING)) this.#finalGoaway();
      this.#pingSentAt = undefined;
      return;
    }
    if (!this.#controlBucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many PING frames");
    }
    this.#queueControl(pingFrame(payload.slice(), true));
  }

  #onGoaway(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "GOAWAY on a stream");
    if (h.length < 8) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
    }
    this.#goawayReceived = true;
    const lastId = readUint31(payload, 0);
    for (const stream of [...this.#streams.values()]) {
      // Streams this side opened that the peer will not process: retry elsewhere.
      const local = (stream.id % 2 === 1) === (this.role === "client");
      if (local && stream.id > lastId) this.#forget(stream, H2_ERROR.REFUSED_STREAM);
    }
    this.#closeIfDrained();
  }

  #onWindowUpdate(h: FrameHeader, payload: Uint8Array): void {
    if (h.length !== 4) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "WINDOW_UPDATE is not 4 bytes");
    }
    const increment = readUint31(payload, 0);
    if (h.streamId === 0) {
      if (increment === 0) {
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection");
      }
      if (!this.#sendWindow.grow(increment)) {
        throw new ConnectionError(
          H2_ERROR.FLOW_CONTROL_ERROR,
          "the connection window passed 2^31-1",
        );
      }
      for (const stream of this.#streams.values()) {
        if (stream.peek() !== undefined) this.#writer.schedule(stream);
      }
      this.#kick();
      return;
    }
    const stream = this.#streams.get(h.streamId);
    if (stream === undefined) {
      if (this.#isIdle(h.streamId)) {
        throw new ConnectionError(
          H2_ERROR.PROTOCOL_ERROR,
          `WINDOW_UPDATE on idle stream ${h.streamId}`,
        );
      }
      return;
    }
    if (increment === 0) {
      throw new StreamError(h.streamId, H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    }
    if (!stream.sendWindow.grow(increment)) {
      throw new StreamError(
        h.streamId,
        H2_ERROR.FLOW_CONTROL_ERROR,
        "the stream window passed 2^31-1",
      );
    }
    if (stream.peek() !== undefined) this.schedule(stream);
  }

  #afterRemoteEnd(stream: Http2Stream): void {
    this.#streamUnacked.delete(stream.id);
    if (stream.state === "closed") this.#forget(stream, undefined);
  }

  // --- stream bookkeeping -------------------------------------------------

  #resetById(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) return this.resetStream(stream, code);
    this.#queueControl(rstStreamFrame(streamId, code));
    this.#rememberReset(streamId);
  }

  #rememberReset(streamId: number): void {
    this.#resetByUs.add(streamId);
    if (this.#resetByUs.size > RESET_MEMORY) {
      this.#resetByUs.delete(this.#resetByUs.values().next().value!);
    }
  }

  #forget(stream: Http2Stream, code: number | undefined): void {
    if (this.#streams.get(stream.id) !== stream) return;
    this.#streams.delete(stream.id);
    this.#streamUnacked.delete(stream.id);
    this.#writer.unschedule(stream);
    if (this.#streams.size === 0) this.#idleSince = this.#clock.now();
    try {
      stream.finish(code);
    } finally {
      this.#closeIfDrained();
    }
  }

  /** This side wrote END_STREAM: close, or stop a peer still sending (as gRPC servers do). */
  #localEnded(stream: Http2Stream): void {
    if (stream.state === "closed") return this.#forget(stream, undefined);
    if (this.role === "server") {
      this.#queueControl(rstStreamFrame(stream.id, H2_ERROR.NO_ERROR));
      this.#rememberReset(stream.id);
      this.#forget(stream, undefined);
    }
  }

  #finalGoaway(): void {
    if (!this.#shutdownPingPending || this.#closed) return;
    this.#shutdownPingPending = false;
    this.#goawayLastId = this.#lastPeerStreamId;
    this.#queueControl(goawayFrame(this.#goawayLastId, H2_ERROR.NO_ERROR));
    this.#closeIfDrained();
  }

  #closeIfDrained(): void {
    if (this.#closed || this.#closing || this.#streams.size > 0) return;
    const leaving = (this.#goawaySent && !this.#shutdownPingPending) || this.#goawayReceived;
    if (leaving) this.#finishWritesThenClose();
  }

  // --- writing ------------------------------------------------------------

  #queueControl(frame: Uint8Array): void {
    if (this.#closed) return;
    const backlog = this.#writer.queueControl(frame);
    if (backlog > this.#limits.maxControlBacklog && !this.#closing) {
      // The peer keeps asking for answers it does not read.
      this.#writer.clearControl();
      this.#fail(H2_ERROR.ENHANCE_YOUR_CALM, "the peer does not read what it asks for");
    }
  }

  #kick(): void {
    if (!this.#closed) this.#writer.kick();
  }

  // --- ending -------------------------------------------------------------

  /** A protocol error or a request to close: GOAWAY with `code`, then close. */
  #fail(code: number, message: string): void {
    if (this.#closed || this.#closing) return;
    if (code !== H2_ERROR.NO_ERROR) this.#options.observer?.connectionError?.(code, message);
    this.#writer.clearStreams();
    this.#writer.clearControl();
    this.#queueControl(goawayFrame(this.#lastPeerStreamId, code, message));
    this.#finishWritesThenClose(code === H2_ERROR.NO_ERROR ? H2_ERROR.CANCEL : code);
  }

  #internalFailure(err: unknown): void {
    this.#options.observer?.internalError?.(err);
    this.#fail(H2_ERROR.INTERNAL_ERROR, "internal error");
  }

  #finishWritesThenClose(streamCode: number = H2_ERROR.CANCEL): void {
    if (this.#closing || this.#closed) return;
    this.#closing = true;
    this.#writer.controlOnly = true;
    this.#writer.clearStreams();
    this.#kick();
    const flushed = this.#writer.idle;
    // A peer that does not read cannot hold the socket open: give up after a second.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => timer = setTimeout(resolve, 1000));
    Promise.race([flushed, timeout]).then(() => {
      clearTimeout(timer);
      this.#terminate(streamCode);
    });
  }

  /** Closes the socket and ends every stream; safe to call more than once. */
  #terminate(streamCode: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#shutdownTimer);
    clearTimeout(this.#graceTimer);
    this.#writer.clearStreams();
    this.#writer.clearControl();
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    for (const stream of streams) {
      try {
        stream.finish(streamCode);
      } catch (err) {
        this.#options.observer?.internalError?.(err);
      }
    }
    try {
      this.#conn.close();
    } catch {
      // Already closed by the peer.
    }
    this.#resolveDone();
  }

  // --- timers -------------------------------------------------------------

  #armTimer(): void {
    const periods = [
      this.#limits.handshakeTimeoutMs,
      this.#limits.idleTimeoutMs,
      this.#limits.keepaliveMs,
    ].filter((ms) => ms > 0);
    if (periods.length === 0) return;
    const every = Math.max(100, Math.min(...periods) / 4);
    this.#timer = setTimeout(() => this.#tick(every), every);
  }

  #tick(every: number): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    const l = this.#limits;
    if (
      !this.#settingsSeen && l.handshakeTimeoutMs > 0 &&
      now - this.#startedAt >= l.handshakeTimeoutMs
    ) {
      this.#fail(H2_ERROR.SETTINGS_TIMEOUT, "no HTTP/2 preface and SETTINGS in time");
    } else if (l.idleTimeoutMs > 0 && now - this.#idleSince >= l.idleTimeoutMs) {
      this.shutdown(1000);
    } else if (l.keepaliveMs > 0 && this.#streams.size > 0) {
      if (this.#pingSentAt !== undefined && now - this.#pingSentAt >= l.keepaliveTimeoutMs) {
        this.#fail(H2_ERROR.NO_ERROR, "keepalive PING not answered");
      } else if (this.#pingSentAt === undefined && now - this.#lastActivity >= l.keepaliveMs) {
        this.#pingSentAt = now;
        this.#queueControl(pingFrame(KEEPALIVE_PING, false));
      }
    }
    if (!this.#closed) this.#timer = setTimeout(() => this.#tick(every), every);
  }
}
