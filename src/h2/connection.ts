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
 * This file is the connection's lifecycle, stream table and writes; the
 * parts live beside it: `_frame_reader.ts` (the preface and every stream
 * frame), `_control_frames.ts` (SETTINGS, PING, GOAWAY, WINDOW_UPDATE),
 * `_keepalive.ts` (handshake, idle and keepalive timers) and
 * `connection_options.ts` (role, limits, observer).
 *
 * @module
 */

import { type CancelTimer, type Clock, systemClock } from "../clock.ts";
import { bytesEqual } from "../bytes_equal.ts";
import { ControlFrames } from "./_control_frames.ts";
import { FrameReader } from "./_frame_reader.ts";
import { Keepalive } from "./_keepalive.ts";
import { StreamTable } from "./_stream_table.ts";
import {
  ConnectionClosedError,
  type ConnectionLimits,
  type ConnectionOptions,
  type ConnectionRole,
  DEFAULT_LIMITS,
} from "./connection_options.ts";
import { H2_ERROR } from "./errors.ts";
import { FlowWindow } from "./flow_window.ts";
import { FrameWriter } from "./frame_writer.ts";
import {
  CLIENT_PREFACE,
  goawayFrame,
  MAX_INT31,
  pingFrame,
  rstStreamFrame,
  settingsFrame,
  windowUpdateFrame,
} from "./frames.ts";
import { type HeaderField, HpackEncoder } from "./hpack.ts";
import { INITIAL_SETTINGS, SETTING, type Settings } from "./settings.ts";
import { Http2Stream, type StreamHost } from "./stream.ts";

export {
  ConnectionClosedError,
  type ConnectionLimits,
  type ConnectionObserver,
  type ConnectionOptions,
  type ConnectionRole,
  DEFAULT_LIMITS,
} from "./connection_options.ts";

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
/** Streams this side reset whose late frames are ignored, not treated as errors. */
const RESET_MEMORY = 1024;
const SHUTDOWN_PING = new Uint8Array([0x73, 0x68, 0x75, 0x74, 0x64, 0x6f, 0x77, 0x6e]);
/** Longest wait for the shutdown PING's answer before the final GOAWAY, ms. */
const SHUTDOWN_PING_WAIT_MS = 1000;
/** Longest wait for the last frames to reach a peer that does not read, ms. */
const FLUSH_TIMEOUT_MS = 1000;
/**
 * How long a server keeps a drained connection open after the client's
 * GOAWAY, still answering its PINGs and SETTINGS, unless the client closes
 * first (as Go's server waits after a GOAWAY). Closing at once lost a PING
 * the client had sent right behind its GOAWAY whenever the two arrived in
 * separate reads (h2spec http2/7 failed that way on a loaded machine), ms.
 */
const PEER_GOAWAY_LINGER_MS = 1000;

/** An HTTP/2 connection. */
export class Http2Connection implements StreamHost {
  readonly role: ConnectionRole;
  readonly #conn: Deno.Conn;
  readonly #limits: ConnectionLimits;
  readonly #options: ConnectionOptions;
  readonly #clock: Clock;
  readonly #streams = new StreamTable<Http2Stream>();
  readonly #resetByUs = new Set<number>();
  readonly #peer: Settings = { ...INITIAL_SETTINGS };
  readonly #encoder = new HpackEncoder();
  readonly #writer: FrameWriter;
  readonly #sendWindow = new FlowWindow(INITIAL_SETTINGS.initialWindowSize);
  #nextLocalStreamId: number;
  #goawaySent = false;
  #goawayLastId = MAX_INT31;
  #closed = false;
  #closing = false;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;
  #cancelShutdownTimer: CancelTimer | undefined;
  #shutdownPingPending = false;
  #cancelGraceTimer: CancelTimer | undefined;
  #cancelLingerTimer: CancelTimer | undefined;
  readonly #control: ControlFrames;
  readonly #keepalive: Keepalive;
  readonly #reader: FrameReader;

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
    this.#nextLocalStreamId = this.role === "client" ? 1 : 2;
    this.#control = new ControlFrames(
      {
        role: this.role,
        peer: this.#peer,
        encoder: this.#encoder,
        sendWindow: this.#sendWindow,
        streams: this.#streams,
        isIdle: (id) => this.#reader.isIdle(id),
        queueStream: (stream) => this.#writer.schedule(stream),
        schedule: (stream) => this.schedule(stream),
        queueControl: (frame) => this.#queueControl(frame),
        kick: () => this.#kick(),
        forget: (stream, code) => this.#forget(stream, code),
        closeIfDrained: () => this.#closeIfDrained(),
        pingAcked: (payload) => this.#pingAcked(payload),
      },
      this.#limits.controlRate,
      this.#clock,
    );
    this.#keepalive = new Keepalive(
      {
        settingsSeen: () => this.#control.settingsSeen,
        streamCount: () => this.#streams.size,
        closed: () => this.#closed,
        handshakeTimedOut: () =>
          this.#fail(H2_ERROR.SETTINGS_TIMEOUT, "no HTTP/2 preface and SETTINGS in time"),
        idle: () => void this.shutdown(1000),
        pingUnanswered: () => this.#fail(H2_ERROR.NO_ERROR, "keepalive PING not answered"),
        sendPing: (payload) => this.#queueControl(pingFrame(payload, false)),
      },
      this.#limits,
      this.#clock,
    );
    this.#reader = new FrameReader({
      role: this.role,
      limits: this.#limits,
      peer: this.#peer,
      streams: this.#streams,
      resetByUs: this.#resetByUs,
      control: this.#control,
      nextLocalStreamId: () => this.#nextLocalStreamId,
      goawaySent: () => this.#goawaySent,
      goawayLastId: () => this.#goawayLastId,
      closing: () => this.#closing,
      openPeerStream: (id) => this.#openStream(id),
      onStream: (stream, fields, endStream, oversized) =>
        this.#options.onStream?.(stream, fields, endStream, oversized),
      released: (stream, bytes) => this.released(stream, bytes),
      afterRemoteEnd: (stream) => this.#afterRemoteEnd(stream),
      forget: (stream, code) => this.#forget(stream, code),
      queueControl: (frame) => this.#queueControl(frame),
      streamError: (code, message) => this.#options.observer?.streamError?.(code, message),
      resetById: (id, code) => this.#resetById(id, code),
      fail: (code, message) => this.#fail(code, message),
      internalFailure: (err) => this.#internalFailure(err),
    }, this.#clock);
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
    }
    this.#keepalive.start();
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
    return !this.closed && !this.#control.goawayReceived && !this.#goawaySent &&
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
        if (n === null || this.#closed) break;
        busy = n === room;
        end += n;
        this.#keepalive.received();
        start = this.#reader.parse(buf, start, end);
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
    const stream = this.#openStream(this.#nextLocalStreamId);
    this.#nextLocalStreamId += 2;
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
    if (this.#closed || this.#closing) return this.#done;
    // No grace: GOAWAY naming the last stream taken, and close now (no timer
    // to wait on, whatever the clock).
    if (graceMs <= 0) {
      this.#fail(H2_ERROR.NO_ERROR, "shutdown without a grace period");
      return this.#done;
    }
    if (!this.#goawaySent) {
      this.#goawaySent = true;
      this.#queueControl(goawayFrame(MAX_INT31, H2_ERROR.NO_ERROR));
      this.#queueControl(pingFrame(SHUTDOWN_PING, false));
      this.#shutdownPingPending = true;
      this.#cancelShutdownTimer = this.#clock.setTimer(
        Math.min(SHUTDOWN_PING_WAIT_MS, graceMs),
        () => this.#finalGoaway(),
      );
      this.#cancelGraceTimer = this.#clock.setTimer(
        graceMs,
        () => this.#fail(H2_ERROR.NO_ERROR, "shutdown grace period over"),
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
    const unacked = stream.recvUnacked + bytes;
    if (unacked >= this.#limits.streamWindow / 2) {
      stream.recvUnacked = 0;
      stream.recvWindow += unacked;
      this.#queueControl(windowUpdateFrame(stream.id, unacked));
    } else {
      stream.recvUnacked = unacked;
    }
  }

  // --- reading ----------------------------------------------------------

  /** A new stream (either side's): in the table, and the connection is no longer idle. */
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

  #afterRemoteEnd(stream: Http2Stream): void {
    stream.recvUnacked = 0;
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
    this.#writer.unschedule(stream);
    if (this.#streams.size === 0) this.#keepalive.quiet();
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

  /** Our shutdown PING's answer sends the final GOAWAY; any answer ends a keepalive wait. */
  #pingAcked(payload: Uint8Array): void {
    if (bytesEqual(payload, SHUTDOWN_PING)) this.#finalGoaway();
    this.#keepalive.pingAnswered();
  }

  #finalGoaway(): void {
    if (!this.#shutdownPingPending || this.#closed) return;
    this.#shutdownPingPending = false;
    this.#goawayLastId = this.#reader.lastPeerStreamId;
    this.#queueControl(goawayFrame(this.#goawayLastId, H2_ERROR.NO_ERROR));
    this.#closeIfDrained();
  }

  #closeIfDrained(): void {
    if (this.#closed || this.#closing || this.#streams.size > 0) return;
    if (this.#goawaySent && !this.#shutdownPingPending) {
      this.#finishWritesThenClose();
    } else if (this.#control.goawayReceived) {
      if (this.role === "client") this.#finishWritesThenClose();
      else {
        this.#cancelLingerTimer ??= this.#clock.setTimer(
          PEER_GOAWAY_LINGER_MS,
          () => this.#finishWritesThenClose(),
        );
      }
    }
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
    this.#queueControl(goawayFrame(this.#reader.lastPeerStreamId, code, message));
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
    // A peer that does not read cannot hold the socket open: give up after a
    // second. This bounds a socket write, an I/O wait, so it runs on real
    // time: a test's frozen clock must not keep a socket open forever.
    let cancel: CancelTimer | undefined;
    const timeout = new Promise<void>((resolve) => {
      cancel = systemClock.setTimer(FLUSH_TIMEOUT_MS, resolve);
    });
    Promise.race([flushed, timeout]).then(() => {
      cancel?.();
      this.#terminate(streamCode);
    });
  }

  /** Closes the socket and ends every stream; safe to call more than once. */
  #terminate(streamCode: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing = true;
    this.#keepalive.stop();
    this.#cancelShutdownTimer?.();
    this.#cancelGraceTimer?.();
    this.#cancelLingerTimer?.();
    this.#writer.clearStreams();
    this.#writer.clearControl();
    const streams = this.#streams.values();
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
}
