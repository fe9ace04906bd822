/**
 * One HTTP/2 connection over a Deno socket (RFC 9113), either side: the
 * preface and SETTINGS exchange, frame parsing and checks, flow control both
 * ways, PING, RST_STREAM, GOAWAY (two-phase on shutdown), and the limits
 * that keep a hostile peer from costing more than its own connection.
 * Nothing here knows gRPC.
 *
 * Reads are parsed synchronously out of one reused buffer; writes are
 * gathered into one reused buffer and written by a single loop, so a slow
 * reader holds back only its own connection.
 *
 * This file reads frames and dispatches each to the one owner of what it
 * changes, passing it the other state it needs: `_stream_store.ts` (the
 * streams and their ids), `_receiver.ts` (DATA, header blocks and the
 * receive windows), `_send_flow.ts` (the send windows), `_life.ts` (the
 * connection's state from open to closed, GOAWAY and shutdown),
 * `frame_writer.ts` (every write), `_keepalive.ts` (handshake, idle and
 * keepalive deadlines) and `connection_options.ts` (role, limits, observer).
 *
 * @module
 */

import { systemClock } from "../clock.ts";
import { TokenBucket } from "../ratelimit/mod.ts";
import { Keepalive } from "./_keepalive.ts";
import { ConnectionLife } from "./_life.ts";
import { Receiver } from "./_receiver.ts";
import { SendFlow } from "./_send_flow.ts";
import { StreamStore } from "./_stream_store.ts";
import {
  ConnectionClosedError,
  type ConnectionLimits,
  type ConnectionOptions,
  type ConnectionRole,
  DEFAULT_LIMITS,
} from "./connection_options.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import { FrameWriter } from "./frame_writer.ts";
import {
  CLIENT_PREFACE,
  FLAG,
  FRAME_HEADER_BYTES,
  FRAME_TYPE,
  type FrameHeader,
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
import { type HeaderBlock, HeaderBlockReader } from "./header_block.ts";
import { type HeaderField, HpackEncoder } from "./hpack.ts";
import { applySettings, INITIAL_SETTINGS, SETTING, type Settings } from "./settings.ts";
import { Http2Stream, type StreamHost } from "./stream.ts";

export {
  ConnectionClosedError,
  type ConnectionLimits,
  type ConnectionObserver,
  type ConnectionOptions,
  type ConnectionRole,
  DEFAULT_LIMITS,
} from "./connection_options.ts";

/** Our SETTINGS_MAX_FRAME_SIZE: the protocol's initial value, which every reader must take. */
const OUR_MAX_FRAME_SIZE = INITIAL_SETTINGS.maxFrameSize;
/**
 * A connection's read buffer at first: room for what a watcher or a unary
 * client sends (a request, SETTINGS, PINGs, WINDOW_UPDATEs). Every
 * connection holds one while its read waits, so a larger first size is
 * multiplied by every watcher connected.
 */
const FIRST_READ_BUFFER_BYTES = 4 * 1024;
/**
 * What it grows to when a frame does not fit or a read fills it: room for
 * two of the largest frames we accept (SETTINGS_MAX_FRAME_SIZE is 16 KiB).
 */
const READ_BUFFER_BYTES = 32 * 1024;

/** An HTTP/2 connection. */
export class Http2Connection implements StreamHost {
  readonly role: ConnectionRole;
  readonly #conn: Deno.Conn;
  readonly #limits: ConnectionLimits;
  readonly #options: ConnectionOptions;
  readonly #streams: StreamStore;
  readonly #receiver: Receiver;
  readonly #sendFlow = new SendFlow();
  readonly #peer: Settings = { ...INITIAL_SETTINGS };
  readonly #encoder = new HpackEncoder();
  readonly #writer: FrameWriter;
  readonly #keepalive: Keepalive;
  readonly #headerBlocks: HeaderBlockReader;
  /** PING and SETTINGS frames the peer may send. */
  readonly #controlBucket: TokenBucket;
  /** RST_STREAM frames the peer may send. */
  readonly #resetBucket: TokenBucket;
  readonly #life: ConnectionLife;
  #prefaceSeen: boolean;
  #settingsSeen = false;

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
    const limits = this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
    const clock = options.clock ?? systemClock;
    this.#streams = new StreamStore(this.role);
    this.#receiver = new Receiver(this.role, limits);
    this.#writer = new FrameWriter(
      conn,
      this.#encoder,
      this.#peer,
      this.#sendFlow,
      () => this.#life.terminate(H2_ERROR.CANCEL),
    );
    this.#keepalive = new Keepalive(limits, clock, (deadline) => this.#life.expired(deadline));
    this.#life = new ConnectionLife({
      role: this.role,
      conn,
      streams: this.#streams,
      writer: this.#writer,
      keepalive: this.#keepalive,
      clock,
      maxControlBacklog: limits.maxControlBacklog,
      observer: options.observer,
    });
    this.#headerBlocks = new HeaderBlockReader({
      maxHeaderListSize: limits.maxHeaderListSize,
      maxContinuationFrames: limits.maxContinuationFrames,
      maxBlockBytes: limits.maxHeaderListSize * 2 + OUR_MAX_FRAME_SIZE,
    });
    this.#controlBucket = new TokenBucket({ ...limits.controlRate, clock });
    this.#resetBucket = new TokenBucket({ ...limits.resetRate, clock });
    this.#prefaceSeen = this.role === "client";
    if (this.role === "client") this.#life.send(CLIENT_PREFACE);
    const settings: [number, number][] = [
      [SETTING.MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams],
      [SETTING.INITIAL_WINDOW_SIZE, limits.streamWindow],
      [SETTING.MAX_HEADER_LIST_SIZE, limits.maxHeaderListSize],
    ];
    if (this.role === "client") settings.unshift([SETTING.ENABLE_PUSH, 0]);
    this.#life.send(settingsFrame(settings));
    const extra = limits.connectionWindow - INITIAL_SETTINGS.initialWindowSize;
    if (extra > 0) this.#life.send(windowUpdateFrame(0, extra));
    this.#keepalive.start();
  }

  /** Resolves once the connection is closed and its socket released. */
  get done(): Promise<void> {
    return this.#life.done;
  }

  /** Whether the connection is closed or closing. */
  get closed(): boolean {
    return this.#life.ending;
  }

  /** Whether new streams may be opened on it (client side). */
  get usable(): boolean {
    return this.#life.open && this.#streams.nextLocalStreamId <= MAX_INT31;
  }

  /**
   * Reads and handles frames until the peer leaves or the connection fails.
   * Never rejects: every failure closes this connection and is reported to
   * the observer.
   *
   * @returns Resolves when the connection is closed.
   */
  async run(): Promise<void> {
    let buf = new Uint8Array(FIRST_READ_BUFFER_BYTES);
    let start = 0;
    let end = 0;
    let busy = false;
    try {
      for (;;) {
        if (
          buf.byteLength < READ_BUFFER_BYTES && (busy || (end === buf.byteLength && start === 0))
        ) {
          // A frame larger than the buffer, or a peer that sends more than it holds.
          const grown = new Uint8Array(READ_BUFFER_BYTES);
          grown.set(buf.subarray(start, end));
          buf = grown;
          end -= start;
          start = 0;
        } else if (end === buf.byteLength) {
          buf.copyWithin(0, start, end);
          end -= start;
          start = 0;
        }
        let n: number | null;
        const room = buf.byteLength - end;
        try {
          n = await this.#conn.read(buf.subarray(end));
        } catch {
          n = null;
        }
        if (n === null || this.closed) break;
        busy = n === room;
        end += n;
        this.#keepalive.received();
        start = this.#parse(buf, start, end);
        if (start === end) start = end = 0;
        if (this.closed) break;
      }
    } catch (err) {
      this.#life.internalFailure(err);
    }
    if (!this.closed) this.#life.terminate(H2_ERROR.CANCEL);
    await this.#life.done;
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
    const stream = this.#openStream(this.#streams.allocateLocalId());
    stream.sendHeaders({ fields }, endStream);
    return stream;
  }

  /**
   * Graceful shutdown (RFC 9113 section 6.8): a GOAWAY that refuses nothing
   * yet and a PING; once the PING returns (or after a second), a GOAWAY
   * naming the last stream accepted. The connection closes when its streams
   * are done, or after `graceMs`. Both waits run on the connection's clock.
   *
   * @param graceMs Longest wait for open streams.
   * @returns Resolves when the connection is closed.
   */
  shutdown(graceMs: number): Promise<void> {
    this.#life.shutdown(graceMs);
    return this.#life.done;
  }

  /**
   * Closes at once: every open stream ends with CANCEL and the socket closes.
   *
   * @param code The GOAWAY code to send first.
   * @param message Debug text.
   * @returns Resolves when closed.
   */
  close(code: number = H2_ERROR.NO_ERROR, message = ""): Promise<void> {
    this.#life.fail(code, message);
    return this.#life.done;
  }

  // --- StreamHost -------------------------------------------------------

  /** @param stream A stream with frames to write. */
  schedule(stream: Http2Stream): void {
    if (!this.closed) this.#writer.schedule(stream);
  }

  /**
   * @param stream The stream to reset.
   * @param code The RST_STREAM code.
   */
  resetStream(stream: Http2Stream, code: number): void {
    if (!this.#streams.holds(stream)) return;
    // A stream this side opened but whose HEADERS never went out is idle for
    // the peer: RST_STREAM there is a protocol error (RFC 9113 section 5.1).
    // Dropping it is enough; the next stream's higher id closes it.
    if (stream.headersWritten || !this.#streams.isLocal(stream.id)) {
      this.#sendReset(stream.id, code);
    }
    this.#forget(stream, code);
  }

  /**
   * @param stream The stream whose DATA was consumed.
   * @param bytes How much.
   */
  released(stream: Http2Stream, bytes: number): void {
    this.#receiver.release(stream, bytes, this.#writer);
    this.#life.checkBacklog();
  }

  /** This side wrote END_STREAM: close, or stop a peer still sending (as gRPC servers do). */
  localEnded(stream: Http2Stream): void {
    if (stream.state === "closed") return this.#forget(stream, undefined);
    if (this.role === "server") {
      this.#sendReset(stream.id, H2_ERROR.NO_ERROR);
      this.#forget(stream, undefined);
    }
  }

  // --- reading ----------------------------------------------------------

  /**
   * Parses and handles every whole frame in `buf[start, end)`.
   *
   * @returns Where the first incomplete frame begins (`end` after a failure).
   */
  #parse(buf: Uint8Array, start: number, end: number): number {
    if (!this.#prefaceSeen) {
      const have = Math.min(end - start, CLIENT_PREFACE.byteLength);
      for (let i = 0; i < have; i++) {
        if (buf[start + i] !== CLIENT_PREFACE[i]) {
          this.#life.fail(
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
    while (end - start >= FRAME_HEADER_BYTES && !this.closed) {
      const header = readFrameHeader(buf, start);
      if (header.length > OUR_MAX_FRAME_SIZE) {
        this.#life.fail(
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
          this.#life.fail(err.code, err.message);
          return end;
        } else {
          this.#life.internalFailure(err);
          return end;
        }
      }
      this.#life.checkBacklog();
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
        return this.#afterRemoteEnd(this.#receiver.onData(h, payload, this.#streams, this.#writer));
      case FRAME_TYPE.HEADERS:
        if (h.streamId === 0) {
          throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "HEADERS on stream 0");
        }
        return this.#onHeaderBlock(this.#headerBlocks.headers(h, payload));
      case FRAME_TYPE.CONTINUATION:
        return this.#onHeaderBlock(this.#headerBlocks.continuation(h, payload));
      case FRAME_TYPE.PRIORITY:
        return checkPriority(h, payload);
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
      default:
        // Unknown frame types are ignored (RFC 9113 section 4.1).
        return;
    }
  }

  /** A whole header block: it may open a stream of the peer's first. */
  #onHeaderBlock(block: HeaderBlock | undefined): void {
    if (block === undefined) return;
    const id = block.streamId;
    let stream = this.#streams.get(id);
    if (stream === undefined) {
      const { refuseAbove } = this.#life;
      const limit = this.#limits.maxConcurrentStreams;
      if (!this.#streams.acceptPeerStream(id, block.selfDependent, refuseAbove, limit)) return;
      stream = this.#openStream(id);
    } else if (block.selfDependent) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
    }
    if (this.#receiver.onHeaderBlock(stream, block, this.#options.onStream)) {
      this.#afterRemoteEnd(stream);
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
      if (this.#streams.isIdle(h.streamId)) {
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

  /** SETTINGS: applied (window changes to every stream), then ACKed. */
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
    if (!this.#settingsSeen) {
      this.#settingsSeen = true;
      this.#keepalive.settled();
    }
    const delta = applySettings(this.#peer, payload);
    this.#sendFlow.initialWindowChanged(delta, this.#streams);
    if (delta > 0) this.#writer.resume(this.#streams);
    this.#encoder.setMaxTableSize(Math.min(this.#peer.headerTableSize, 4096));
    this.#life.send(SETTINGS_ACK);
  }

  /** WINDOW_UPDATE: the streams the window held back go back in the writer's line. */
  #onWindowUpdate(h: FrameHeader, payload: Uint8Array): void {
    const grown = this.#sendFlow.onWindowUpdate(h, payload, this.#streams);
    if (grown === "connection") this.#writer.resume(this.#streams);
    else if (grown?.peek() !== undefined) this.#writer.schedule(grown);
  }

  /** PING: answered; an answer to ours sends the final GOAWAY or ends a keepalive wait. */
  #onPing(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PING on a stream");
    if (h.length !== 8) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "PING is not 8 bytes");
    if (h.flags & FLAG.ACK) {
      return this.#life.pingAnswered(payload);
    }
    if (!this.#controlBucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many PING frames");
    }
    this.#life.send(pingFrame(payload.slice(), true));
  }

  /**
   * GOAWAY: streams this side opened above the peer's last id are refused
   * (retry elsewhere); the connection closes once the rest are done.
   */
  #onGoaway(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "GOAWAY on a stream");
    if (h.length < 8) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
    }
    const lastId = readUint31(payload, 0);
    for (const stream of this.#streams.values()) {
      if (this.#streams.isLocal(stream.id) && stream.id > lastId) {
        this.#forget(stream, H2_ERROR.REFUSED_STREAM);
      }
    }
    this.#life.peerGoingAway();
  }

  // --- streams ------------------------------------------------------------

  /** A new stream (either side's): in the store, and the connection is no longer idle. */
  #openStream(id: number): Http2Stream {
    const stream = new Http2Stream(
      id,
      this,
      this.#peer.initialWindowSize,
      this.#limits.streamWindow,
    );
    this.#streams.set(id, stream);
    this.#keepalive.busy();
    return stream;
  }

  /** The peer ended its side of `stream` (if given): forgotten once this side's is over too. */
  #afterRemoteEnd(stream: Http2Stream | undefined): void {
    if (stream?.state === "closed") this.#forget(stream, undefined);
  }

  #resetById(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) return this.resetStream(stream, code);
    this.#sendReset(streamId, code);
  }

  /** RST_STREAM out; the stream's late frames will be ignored. */
  #sendReset(streamId: number, code: number): void {
    this.#life.send(rstStreamFrame(streamId, code));
    this.#streams.rememberReset(streamId);
  }

  #forget(stream: Http2Stream, code: number | undefined): void {
    if (!this.#streams.remove(stream)) return;
    this.#writer.unschedule(stream);
    if (this.#streams.size === 0) this.#keepalive.quiet();
    try {
      stream.finish(code);
    } finally {
      this.#life.closeIfDrained();
    }
  }
}

/**
 * PRIORITY is ignored (RFC 9113 section 5.3.2 deprecates it) once checked.
 *
 * @throws {ConnectionError} On stream 0.
 * @throws {StreamError} For a wrong length or a stream that depends on itself.
 */
function checkPriority(h: FrameHeader, payload: Uint8Array): void {
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
